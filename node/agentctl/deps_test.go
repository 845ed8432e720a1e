package agentctl

import (
	"go/build"
	"testing"
)

// The machine stays pure: it imports the standard library's data packages
// only (no net, os, time, sync: no I/O, clock, lock or goroutine), and
// nothing of the project. An import that brings one back fails here.
func TestMachineImportsNoIO(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"cmp": true, "slices": true, "strconv": true}
	for _, imp := range pkg.Imports {
		if !allowed[imp] {
			t.Errorf("node/agentctl imports %s: the machine must do no I/O, read no clock, take no lock (allowed: cmp, slices, strconv)", imp)
		}
	}
}
