package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// FullName is the file name of the full binary (cmd/cosched-full): every
// command, among them those that link the heavy libraries (memberlist,
// Prometheus, cgroups, gonum/plot), whose package initialisation alone
// costs tens of milliseconds. The light binary, cmd/cosched, executes it
// for those commands, as git runs git-CMD.
const FullName = "cosched-full"

// Full are the full binary's own commands: Root's go below the root
// (agent, cluster, bench, ui, bench-rank, which agents run, and the
// hidden bench-probe and __rank-exec),
// SimPlot and SimClosed below sim.
type Full struct {
	Root      []*cobra.Command
	SimPlot   *cobra.Command
	SimClosed *cobra.Command
}

// fullAnnotation marks a stub of a full binary's command in the light
// tree.
const fullAnnotation = "cosched-full"

// commands are f's commands, or stubs of them when f is nil. Each stub has
// the real command's name, short help and visibility (a test of
// cmd/cosched-full compares them), so `cosched --help` lists every
// command.
func (f *Full) commands() (root []*cobra.Command, simPlot, simClosed *cobra.Command) {
	if f != nil {
		return f.Root, f.SimPlot, f.SimClosed
	}
	root = []*cobra.Command{
		stub("agent", "Run a node agent (one per node; one of them with --controller)", false),
		stub("cluster", "Start or stop a local cluster of agents on loopback", false),
		stub("bench", "Measure the runtime on this machine", false),
		stub("ui [--url] | ui --results DIR [--listen HOST:PORT]", "Open the cluster's web page (the live matrix, the queue, the nodes), or serve a results folder as plots", false),
		stub("bench-rank", "Run one rank of a benchmark job (what agents run for submit --bench)", false),
		stub("bench-probe", "One rank of a calibration probe (what bench calibrate runs)", true),
		stub("__rank-exec -- PROGRAM ARGS...", "", true),
	}
	simPlot = stub("plot", "Draw the figures of a sweep: response, wait, slowdown and utilization", false)
	simClosed = stub("closed", "Simulate gang policies (fcfs, afcfs, ljfs) in Karatza's closed network of processors and an I/O unit", false)
	return root, simPlot, simClosed
}

// ErrNeedsFull is what a stub returns when it is run: the light binary
// executes the full one before it gets there (NeedsFull).
var ErrNeedsFull = errors.New("this command is in " + FullName)

func stub(use, short string, hidden bool) *cobra.Command {
	return &cobra.Command{
		Use:    use,
		Short:  short,
		Hidden: hidden,
		// The full binary parses the flags, with its own messages.
		DisableFlagParsing: true,
		Annotations:        map[string]string{fullAnnotation: "stub"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%s: %w", cmd.CommandPath(), ErrNeedsFull)
		},
	}
}

// NeedsFull says whether the command line args (without the program
// name) runs one of the full binary's commands in root (NewRoot(nil)): the
// command itself, its help (`help agent`) or its shell completion.
func NeedsFull(root *cobra.Command, args []string) bool {
	if len(args) > 0 {
		switch args[0] {
		case "help", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			args = args[1:]
		}
	}
	cmd, _, err := root.Find(args)
	return err == nil && cmd.Annotations[fullAnnotation] != ""
}

// FullPath is the full binary of the light binary exe: FullName beside it
// (make build's bin/, go install's $GOBIN), else in lib/cosched/ beside
// its bin directory (where the rank shim is), through symbolic links. The
// error names both places.
func FullPath(exe string) (string, error) {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	dir := filepath.Dir(exe)
	places := []string{filepath.Join(dir, FullName), filepath.Join(dir, "..", "lib", "cosched", FullName)}
	for _, p := range places {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("this command is in %s, found neither at %s nor at %s: build both with `make build` (or `go install ./cmd/...`)", FullName, places[0], filepath.Clean(places[1]))
}
