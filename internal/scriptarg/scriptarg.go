// Package scriptarg reads the arguments of datadriven test scripts
// (github.com/cockroachdb/datadriven) with a default, for the script
// tests of gang, node/ctl and node/agentctl.
package scriptarg

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Get is the value of the command's argument key (e.g. procs=4), or def
// when the command has none; a value that does not scan as a T fails t.
func Get[T any](t testing.TB, d *datadriven.TestData, key string, def T) T {
	t.Helper()
	if !d.HasArg(key) {
		return def
	}
	var v T
	d.ScanArgs(t, key, &v)
	return v
}
