package api

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cosched/cosched/internal/depgraph"
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
		g, err := depgraph.Load(goTool, pkg)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range forbidden {
			if g.Links(f) {
				t.Errorf("%s links %s: %s", pkg, f, strings.Join(g.Path(f), " → "))
			}
		}
	}
}
