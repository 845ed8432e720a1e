package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cosched/cosched/internal/depgraph"
)

// heavyPackages are the packages (path prefixes) the light binary must
// not link: their package initialisation (gonum/plot parses twelve fonts,
// Prometheus registers its collectors, memberlist brings DNS and gob,
// cgroups protobuf) was most of a CLI call's start-up; gonum's BLAS and
// LAPACK (for sim closed alone) were a fifth of its code. They belong to
// cosched-full, which the light binary executes for the commands that
// need them.
var heavyPackages = []string{
	"github.com/cosched/cosched/node", // the agent (but node/rank/shim, where the rank shim is)
	"github.com/cosched/cosched/jss/plot",
	"github.com/cosched/cosched/bench/measure",
	"github.com/cosched/cosched/bench/experiment",
	"github.com/cosched/cosched/ui",
	"gonum.org/v1/plot",
	"gonum.org/v1/gonum", // sim closed's distributions: a fifth of the code (BLAS, LAPACK)
	"github.com/prometheus/",
	"github.com/hashicorp/memberlist",
	"github.com/hashicorp/raft",
	"github.com/miekg/dns",
	"github.com/containerd/cgroups",
	"google.golang.org/protobuf",
	"go.etcd.io/bbolt",
	"encoding/gob",
	"runtime/metrics",
	"github.com/dustin/go-humanize", // compiles a regular expression at start-up: internal/bytesize instead
}

// The light binary links none of the heavy packages; an import that
// brings one in fails here, naming the path it came by.
func TestLightBinaryLinksNoHeavyPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list dependencies with")
	}
	const self = "github.com/cosched/cosched/cmd/cosched"
	g, err := depgraph.Load(goTool, self)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Links("github.com/cosched/cosched/internal/cli") {
		t.Fatalf("go list -deps %s lists no internal/cli: %d packages", self, len(g.Imports))
	}
	for p := range g.Imports {
		if p == "github.com/cosched/cosched/node/rank/shim" {
			continue
		}
		for _, h := range heavyPackages {
			if p == h || strings.HasPrefix(p, strings.TrimSuffix(h, "/")+"/") {
				t.Errorf("%s links %s: %s", self, p, strings.Join(g.Path(p), " → "))
			}
		}
	}
}
