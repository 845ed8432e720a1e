package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/node/rank"
)

// The built binary is a working shim and keeper: a rank manager given it
// starts ranks stopped (the program runs only after Cont) and, with
// KeepDir, under a keeper whose exit record carries the program's status.
func TestBinaryStartsAndKeepsRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "cosched-rank")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "shim", true: "keeper"}[keep], func(t *testing.T) {
			cfg := rank.Config{Shim: []string{bin}, Log: zaptest.NewLogger(t)}
			if keep {
				cfg.KeepDir, cfg.KeepOwner = t.TempDir(), "test"
			}
			m, err := rank.NewManager(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			logs := t.TempDir()
			marker := filepath.Join(logs, "ran")
			pid, err := m.Start(rank.Spec{Job: 1, Rank: 0, Size: 1, LogDir: logs, CPU: -1, Stopped: true,
				Argv: []string{"sh", "-c", `echo "$COSCHED_RANK" > "$0"; exit 3`, marker}})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			// Start returns once the shim has stopped itself: the program
			// has run no instruction yet.
			time.Sleep(50 * time.Millisecond)
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the program ran before Cont")
			}
			if err := m.Cont(1); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-m.Exits():
				if e.PID != pid || e.Code != 3 || e.Err != nil {
					t.Errorf("Exit %+v, want pid %d status 3", e, pid)
				}
			case <-time.After(time.Minute):
				t.Fatal("no Exit within a minute")
			}
			if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "0" {
				t.Errorf("the program wrote %q, %v; want its rank, 0", b, err)
			}
		})
	}
}
