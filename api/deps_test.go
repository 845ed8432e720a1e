package api

import (
	"os/exec"
	"strings"
	"testing"
)

// The API and the programs that only need a client link nothing of the
// agent: no gossip, no relay, no slice clock, no logging library, no
// metrics exposition. An import that brings
// one of them back fails here, naming the path it came by.
func TestClientSideLinksNoAgent(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list dependencies with")
	}
	const mod = "github.com/cosched/cosched/"
	forbidden := []string{
		"github.com/hashicorp/memberlist",
		mod + "member",
		mod + "comm/relay",
		mod + "node",
		mod + "strobe",
		"go.uber.org/zap",
		"github.com/prometheus/client_golang/prometheus",
	}
	for _, pkg := range []string{mod + "api", mod + "bench/experiment", mod + "localcluster"} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		imports := map[string][]string{} // package → its imports
		for line := range strings.Lines(string(out)) {
			p, deps, _ := strings.Cut(strings.TrimSpace(line), ": ")
			imports[p] = strings.Fields(deps)
		}
		for _, f := range forbidden {
			if _, ok := imports[f]; ok {
				t.Errorf("%s links %s: %s", pkg, f, strings.Join(importPath(imports, pkg, f), " → "))
			}
		}
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
