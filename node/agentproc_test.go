package node_test

import (
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
	fs.Var(&join, "join", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	exe, _ := os.Executable()
	log, _ := zap.NewProduction()
	a, err := node.Start(node.Config{Name: *name, Bind: *bind, Local: true, StateDir: *state, Join: join,
		Controller: *controller, Controllers: *controllers, RaftPort: *raftPort, NoCompute: *noCompute, Processors: *processors,
		Mode: sharing.Mode(*mode), Slice: *slice, MPL: *mpl, Policy: "easy", ControllerGrace: *grace,
		Shim: []string{exe, "__rank-exec"}, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	b, _ := json.Marshal(map[string]any{"name": *name, "pid": os.Getpid(), "gossip": a.GossipAddr(), "api": a.APIAddr()})
	if err := atomicfile.WriteFile(*ready, b); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case <-a.Done():
	}
	if err := a.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	return 0
}

type multiFlag []string

func (m *multiFlag) String() string     { return filepath.Join(*m...) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
