package node_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/shimtest"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// agentProcArg makes this test binary a `cosched agent` process (the flags
// the failover tests use), so they can kill it with SIGKILL.
const agentProcArg = "__agent"

// agentProcMain runs an agent until SIGTERM and writes its addresses to
// --ready-file once it is up.
func agentProcMain(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var join multiFlag
	name := fs.String("name", "", "")
	bind := fs.String("bind", "127.0.0.1:0", "")
	state := fs.String("state-dir", "", "")
	ready := fs.String("ready-file", "", "")
	controller := fs.Bool("controller", false, "")
	controllers := fs.Int("controllers", 1, "")
	raftPort := fs.Int("raft-port", 0, "")
	noCompute := fs.Bool("no-compute", false, "")
	processors := fs.Int("processors", 0, "")
	mode := fs.String("mode", "gang", "")
	slice := fs.Duration("slice", 20*time.Millisecond, "")
	mpl := fs.Int("mpl", 1, "")
	grace := fs.Duration("controller-grace", time.Minute, "")
	deadAfter := fs.Duration("dead-controller-after", 0, "")
	keep := fs.Bool("keep-ranks", false, "")
	cpuWeight := fs.Int("jobs-cpu-weight", 0, "")
	mpiLib := fs.String("mpi-lib", "", "")
	fs.Var(&join, "join", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	exe, _ := os.Executable()
	shim := os.Getenv(shimtest.Env) // the test process's (TestMain)
	if shim == "" {
		fmt.Fprintf(os.Stderr, "agent: no rank shim: %s is not set\n", shimtest.Env)
		return 2
	}
	log, _ := zap.NewProduction()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := node.Run(ctx, node.Config{Name: *name, Bind: *bind, Local: true, StateDir: *state, Join: join,
		Controller: *controller, Controllers: *controllers, RaftPort: *raftPort, NoCompute: *noCompute, Processors: *processors,
		Mode: sharing.Mode(*mode), Slice: *slice, MPL: *mpl, Policy: "easy", ControllerGrace: *grace, DeadControllerAfter: *deadAfter, KeepRanks: *keep, JobsCPUWeight: *cpuWeight, MPILib: *mpiLib,
		Shim: []string{shim}, BenchRank: []string{exe, "bench-rank"}, Log: log}, func(a *node.Agent) error {
		b, _ := json.Marshal(map[string]any{"name": *name, "pid": os.Getpid(), "gossip": a.GossipAddr(), "api": a.APIAddr()})
		return atomicfile.WriteFile(*ready, b)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	return 0
}

type multiFlag []string

func (m *multiFlag) String() string     { return filepath.Join(*m...) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
