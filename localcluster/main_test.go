package localcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/node/rank"
	"github.com/cosched/cosched/sharing"
)

// The test binary doubles as the programs a local cluster starts: `agent`
// (the flags Up gives an agent) and the rank shim the agents start every
// rank through. TestMain dispatches on the first argument, so no cosched
// binary is built.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "agent":
			os.Exit(agentMain(os.Args[2:]))
		case "__rank-exec":
			os.Exit(rank.ShimMain(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
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
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	return 0
}

// agentConfig reads the flags Up gives an agent (localcluster.go's launch
// and controllerArgs) into its configuration.
func agentConfig(args []string) (cfg node.Config, ready string, cleanup bool, err error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var join joinFlag
	fs.Var(&join, "join", "")
	fs.BoolVar(&cleanup, "cleanup", false, "")
	fs.StringVar(&cfg.Name, "name", "", "")
	fs.StringVar(&cfg.Bind, "bind", "127.0.0.1:0", "")
	fs.BoolVar(&cfg.Local, "local", false, "")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "")
	fs.BoolVar(&cfg.NoCompute, "no-compute", false, "")
	fs.IntVar(&cfg.Processors, "processors", 0, "")
	fs.IntVar(&cfg.Priority, "realtime-priority", 0, "")
	fs.IntVar(&cfg.Controllers, "controllers", 1, "")
	fs.IntVar(&cfg.RaftPort, "raft-port", 0, "")
	fs.StringVar(&cfg.Suspend, "suspend", api.SuspendSignal, "")
	fs.BoolVar(&cfg.Controller, "controller", false, "")
	fs.Int64Var(&cfg.FirstJobID, "first-job-id", 0, "")
	mode := fs.String("mode", "gang", "")
	fs.DurationVar(&cfg.Slice, "slice", 50*time.Millisecond, "")
	fs.IntVar(&cfg.MPL, "mpl", 3, "")
	policy := fs.String("policy", "easy", "")
	bandwidth := fs.Float64("bandwidth", 0, "")
	fs.IntVar(&cfg.StrobeFanout, "strobe-fanout", 0, "")
	resv := fs.String("reservations", "", "")
	resvMode := fs.String("reservations-mode", "", "")
	weights := fs.String("weights", "", "")
	keyFile := fs.String("key-file", "", "")
	fs.String("log-format", "json", "")
	fs.StringVar(&ready, "ready-file", "", "")
	if err := fs.Parse(args); err != nil {
		return cfg, "", false, err
	}
	cfg.Join, cfg.Mode, cfg.Policy, cfg.Bandwidth = join, sharing.Mode(*mode), gang.Policy(*policy), *bandwidth
	// cosched agent's defaults for what Up does not set.
	cfg.ControllerGrace, cfg.MemReserve, cfg.Nice = 5*time.Minute, 512<<20, -10
	if *resv != "" {
		if cfg.Backfill.Reservations, err = gang.ParseReservations(*resv); err != nil {
			return cfg, "", false, err
		}
	}
	cfg.Backfill.Mode = gang.ReservationMode(*resvMode)
	if *weights != "" {
		w, err := gang.ParseWeights(*weights)
		if err != nil {
			return cfg, "", false, err
		}
		cfg.Backfill.Weights = &w
	}
	if *keyFile != "" {
		if cfg.Key, err = clusterkey.Load(*keyFile); err != nil {
			return cfg, "", false, err
		}
		cfg.SecretKey = cfg.Key.Derive("gossip")
	}
	if cfg.Log, err = zap.NewProduction(); err != nil {
		return cfg, "", false, err
	}
	return cfg, ready, cleanup, nil
}

// joinFlag collects every --join.
type joinFlag []string

func (j *joinFlag) String() string     { return strings.Join(*j, ",") }
func (j *joinFlag) Set(v string) error { *j = append(*j, v); return nil }
