package localcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/cosched/cosched/internal/flagfile"
	"github.com/cosched/cosched/internal/shimtest"
	"github.com/cosched/cosched/node"
)

// The test binary doubles as the agents a local cluster starts (`agent`:
// the flags Up gives an agent); TestMain dispatches on the first
// argument. The agents start ranks through the real rank shim,
// cmd/cosched-rank, built once per run (shimtest.Run): through the test
// binary a rank's start-up was ten times longer and could starve past the
// rank manager's start timeout on a loaded host.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(agentMain(os.Args[2:]))
	}
	// The tests run in a goroutine; this one keeps the main thread
	// (locked since init) and runs what onMainThread sends it.
	code := make(chan int)
	go func() { code <- shimtest.Run(m) }()
	for {
		select {
		case f := <-mainThreadWork:
			f()
		case c := <-code:
			os.Exit(c)
		}
	}
}

// The main goroutine stays on the process's main thread, so a test can
// run code there (onMainThread): the thread the Go runtime never ends.
func init() { runtime.LockOSThread() }

// mainThreadWork carries functions to TestMain's goroutine, locked to the
// main thread.
var mainThreadWork = make(chan func())

// onMainThread runs f on the process's main thread and waits for it.
func onMainThread(f func()) {
	done := make(chan struct{})
	mainThreadWork <- func() { defer close(done); f() }
	<-done
}

// testExe is the binary the tests' clusters run: this test binary.
func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// agentMain runs an agent with the flags Up and Restart give it, writes
// its Ready record to --ready-file once it is up, and stops on SIGTERM.
func agentMain(args []string) int {
	cfg, ready, cleanup, err := agentConfig(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 2
	}
	if cleanup { // what Stop runs for an agent that died
		if _, err := node.CleanupCgroups(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = node.Run(ctx, cfg, func(a *node.Agent) error {
		return WriteReady(ready, Ready{Name: a.Name(), PID: os.Getpid(), Gossip: a.GossipAddr(), API: a.APIAddr(), Socket: a.APISocket()})
	})
	if err != nil {
		// "cosched: " as the real binary says it: Up's error quotes it.
		fmt.Fprintln(os.Stderr, "cosched: agent:", err)
		return 1
	}
	return 0
}

// agentConfig reads the flags Up gives an agent (localcluster.go's launch
// and controllerArgs) into its settings, which node.Settings.Config reads
// as cosched agent does.
func agentConfig(args []string) (cfg node.Config, ready string, cleanup bool, err error) {
	s := node.DefaultSettings()
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.Var((*joinFlag)(&s.Join), "join", "")
	fs.BoolVar(&cleanup, "cleanup", false, "")
	fs.StringVar(&ready, "ready-file", "", "")
	for name, p := range map[string]*string{"name": &s.Name, "bind": &s.Bind, "state-dir": &s.StateDir, "suspend": &s.Suspend, "mode": &s.Mode,
		"slice": &s.Slice, "policy": &s.Policy, "bandwidth": &s.Bandwidth, "mpi": &s.MPI, "reservations": &s.Reservations,
		"reservations-mode": &s.ReservationsMode, "weights": &s.Weights, "key-file": &s.KeyFile, "log-format": &s.LogFormat} {
		fs.StringVar(p, name, *p, "")
	}
	for name, p := range map[string]*int{"processors": &s.Processors, "realtime-priority": &s.Priority, "controllers": &s.Controllers,
		"raft-port": &s.RaftPort, "mpl": &s.MPL, "strobe-fanout": &s.StrobeFanout} {
		fs.IntVar(p, name, *p, "")
	}
	for name, p := range map[string]*bool{"local": &s.Local, "no-compute": &s.NoCompute, "controller": &s.Controller, "unsealed-strobes": &s.UnsealedStrobes, "keep-ranks": &s.KeepRanks} {
		fs.BoolVar(p, name, *p, "")
	}
	fs.Int64Var(&s.FirstJobID, "first-job-id", 0, "")
	if err := fs.Parse(args); err != nil {
		return cfg, "", false, err
	}
	given, flags := map[string]bool{}, flagfile.FlagNames(s)
	fs.Visit(func(f *flag.Flag) { given["--"+f.Name] = true })
	if cfg, err = s.Config("", func(field string) bool { return given[flags[field]] }); err != nil {
		return cfg, ready, cleanup, err
	}
	// The shim the test process built (an installed agent finds it in
	// lib/cosched beside its binary, which a test binary has not).
	bin := os.Getenv(shimtest.Env)
	if bin == "" {
		return cfg, ready, cleanup, fmt.Errorf("no rank shim: %s is not set", shimtest.Env)
	}
	cfg.Shim = []string{bin}
	return cfg, ready, cleanup, nil
}

// joinFlag collects every --join.
type joinFlag []string

func (j *joinFlag) String() string     { return strings.Join(*j, ",") }
func (j *joinFlag) Set(v string) error { *j = append(*j, v); return nil }
