package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
)

// The light binary's tree has every command of the full one, the full
// binary's own as stubs of the same name, short help and visibility: its
// --help lists them as the full binary would, and the user's command line
// finds the command it names there before it executes the full binary.
func TestStubsMatchFull(t *testing.T) {
	light, full := cli.NewRoot(nil), newRootCmd()
	var walk func(from, in *cobra.Command, stubs bool)
	walk = func(from, in *cobra.Command, stubs bool) {
		for _, c := range from.Commands() {
			path := strings.Fields(c.CommandPath())[1:]
			other, _, err := in.Find(path)
			if err != nil || other.CommandPath() != c.CommandPath() {
				t.Errorf("%s: not in the other tree (%v)", c.CommandPath(), err)
				continue
			}
			if c.Use != other.Use || c.Short != other.Short || c.Hidden != other.Hidden {
				t.Errorf("%s: %q %q hidden %v, the other tree's %q %q hidden %v", c.CommandPath(), c.Use, c.Short, c.Hidden, other.Use, other.Short, other.Hidden)
			}
			// Below a stub, the full tree alone has commands.
			if !stubs || !cli.NeedsFull(light, path) {
				walk(c, in, stubs)
			}
		}
	}
	walk(full, light, true)
	walk(light, full, false)
	for _, path := range [][]string{{"agent"}, {"cluster", "up"}, {"bench", "run"}, {"ui"}, {"sim", "plot"}, {"sim", "closed"}, {"__rank-exec"}, {"bench-probe"}, {"bench-rank"}, {"help", "agent"}} {
		if !cli.NeedsFull(light, path) {
			t.Errorf("%v runs in the light binary", path)
		}
	}
	for _, path := range [][]string{{}, {"--version"}, {"sim"}, {"sim", "sweep"}, {"submit"}, {"queue"}, {"help"}, {"help", "submit"}} {
		if cli.NeedsFull(light, path) {
			t.Errorf("%v executes the full binary", path)
		}
	}
}
