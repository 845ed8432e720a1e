package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cosched/cosched/internal/depgraph"
)

// The rank shim links the standard library, x/sys and its own package,
// nothing else: every rank start runs the package initialisation of
// whatever it links (gonum/plot parses twelve fonts at init, the
// metrics library registers collectors), and every kept rank keeps its
// text mapped for the rank's life. An import that brings anything else in
// fails here, naming the path it came by.
func TestShimLinksOnlyTheStandardLibrary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list dependencies with")
	}
	const self = "github.com/cosched/cosched/cmd/cosched-rank"
	allowed := map[string]bool{
		self: true,
		"github.com/cosched/cosched/node/rank/shim": true,
		"golang.org/x/sys/unix":                     true,
	}
	g, err := depgraph.Load(goTool, self)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Imports) < 3 {
		t.Fatalf("go list -deps %s listed %d packages", self, len(g.Imports))
	}
	for p := range g.Imports {
		if !g.Standard[p] && !allowed[p] {
			t.Errorf("%s links %s: %s", self, p, strings.Join(g.Path(p), " → "))
		}
	}
}
