package main

import (
	"os/exec"
	"strings"
	"testing"
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
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \" \"}}", self).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", self, err)
	}
	imports := map[string][]string{} // package → its imports
	var foreign []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line) // path, standard, imports…
		if len(f) < 2 {
			t.Fatalf("go list -deps %s: line %q", self, line)
		}
		p := f[0]
		imports[p] = f[2:]
		if f[1] != "true" && !allowed[p] {
			foreign = append(foreign, p)
		}
	}
	if len(imports) < 3 {
		t.Fatalf("go list -deps %s listed %d packages: %q", self, len(imports), out)
	}
	for _, p := range foreign {
		t.Errorf("%s links %s: %s", self, p, strings.Join(importPath(imports, self, p), " → "))
	}
}

// importPath finds a chain of imports from one package to another
// (breadth first: the shortest).
func importPath(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		for _, d := range imports[p] {
			if _, seen := prev[d]; !seen {
				prev[d] = p
				queue = append(queue, d)
			}
		}
	}
	return []string{from, "…", to}
}
