package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/jobcg"
)

// needCgroups skips a test where this host's cgroups cannot be used.
func needCgroups(t *testing.T) {
	t.Helper()
	tr, err := jobcg.Open(jobcg.Config{Agent: "i15-probe-" + strconv.Itoa(os.Getpid())})
	if err != nil {
		t.Skipf("cgroups: %v", err)
	}
	defer tr.Close()
	if tr.Mode() == jobcg.ModeNone {
		t.Skipf("cgroups unavailable here: %s", tr.Reason())
	}
}

// A rank whose children double-fork into a new session (setsid).
var escaper = []string{"sh", "-c", `setsid sh -c 'sleep 300 & wait' & sleep 300`}

// An agent SIGKILLed leaves what its ranks setsid'd (the parent-death
// signal reaches only the ranks); restarted with the same name and state
// directory it finds its previous life's job cgroups and kills them.
func TestAgentRestartCleansWhatItsKilledLifeLeft(t *testing.T) {
	needCgroups(t)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready.json")
	start := func() (*os.Process, string) {
		t.Helper()
		os.Remove(ready)
		cmd := coschedCmd("agent", "--name", "i15-restart", "--controller", "--mode", "space", "--bind", "127.0.0.1:0",
			"--local", "--processors", "1", "--state-dir", filepath.Join(dir, "state"), "--ready-file", ready,
			"--realtime-priority", "0", "--nice", "0", "--log-level", "warn")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }) // graceful: it removes its cgroups
		var info struct{ API string }
		eventually(t, 20*time.Second, func() error {
			b, err := os.ReadFile(ready)
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &info)
		})
		return cmd.Process, info.API
	}
	agent, addr := start()
	client := api.NewClient(addr)
	var id int64
	eventually(t, 20*time.Second, func() error {
		var err error
		id, err = client.Submit(context.Background(), api.JobSpec{Command: escaper, Processors: 1, TimeLimit: api.Duration{D: time.Minute}})
		return err
	})
	var pids []int
	eventually(t, 20*time.Second, func() error {
		if pids = jobPIDs(t, dir, id); len(pids) != 4 {
			return fmt.Errorf("%d of 4 processes", len(pids))
		}
		return nil
	})
	t.Logf("job %d: processes %v", id, pids)
	if err := agent.Kill(); err != nil {
		t.Fatal(err)
	}
	// The rank died with its agent (parent-death signal); its
	// descendants did not (the child of its group, the setsid pair):
	// only the cgroup still holds them.
	eventually(t, 10*time.Second, func() error {
		if n := len(jobPIDs(t, dir, id)); n != 3 {
			return fmt.Errorf("%d processes of the job alive after the agent's death, want the rank's 3 descendants", n)
		}
		return nil
	})
	start()
	eventually(t, 20*time.Second, func() error {
		if left := jobPIDs(t, dir, id); len(left) > 0 {
			return fmt.Errorf("processes left after the agent's restart: %v", left)
		}
		return nil
	})
}
