// Package depgraph reads a package's import graph from `go list -deps`,
// for tests that keep a binary's dependencies in bounds (the client side
// links no agent; the rank shim links only the standard library) and
// name the chain of imports that broke the bound.
package depgraph

import (
	"fmt"
	"os/exec"
	"strings"
)

// Graph is a package and everything it links.
type Graph struct {
	Root     string
	Imports  map[string][]string // package → the packages it imports
	Standard map[string]bool     // packages of the standard library
}

// Load lists pkg's dependencies with the go command goTool.
func Load(goTool, pkg string) (*Graph, error) {
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \" \"}}", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w", pkg, err)
	}
	g := &Graph{Root: pkg, Imports: map[string][]string{}, Standard: map[string]bool{}}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line) // path, standard, imports…
		if len(f) < 2 {
			return nil, fmt.Errorf("go list -deps %s: line %q", pkg, line)
		}
		g.Imports[f[0]] = f[2:]
		g.Standard[f[0]] = f[1] == "true"
	}
	if _, ok := g.Imports[pkg]; !ok {
		return nil, fmt.Errorf("go list -deps %s: the package itself is not listed", pkg)
	}
	return g, nil
}

// Links reports whether the graph contains package p.
func (g *Graph) Links(p string) bool {
	_, ok := g.Imports[p]
	return ok
}

// Path finds a chain of imports from the root to package to (breadth
// first: the shortest).
func (g *Graph) Path(to string) []string {
	prev := map[string]string{g.Root: ""}
	queue := []string{g.Root}
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
		for _, d := range g.Imports[p] {
			if _, seen := prev[d]; !seen {
				prev[d] = p
				queue = append(queue, d)
			}
		}
	}
	return []string{g.Root, "…", to}
}
