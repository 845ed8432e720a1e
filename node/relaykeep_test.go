package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/comm"
)

// envStreamStop names the file whose existence ends a "stream" rank.
const envStreamStop = "COSCHED_TEST_STREAM_STOP"

// commStream is a numbered exchange between two ranks: in round i each
// sends i to the other twice, with tags 1 and 2, and receives the
// other's, tag 2 first (so the relay queues tag 1's: messages are matched
// out of order), checking that every number comes exactly once and in
// order; it prints "got i" for each round, and enters a barrier every
// fourth.
// Round i also says whether its sender saw the stop file: both ranks end
// after the same round, the first where either did.
func commStream(ctx context.Context, c *comm.Comm) error {
	if c.Size() != 2 {
		return fmt.Errorf("stream: %d ranks, want 2", c.Size())
	}
	stop := os.Getenv(envStreamStop)
	if stop == "" {
		return errors.New("stream: " + envStreamStop + " is not set")
	}
	fmt.Println("start")
	peer := 1 - c.Rank()
	for i := 1; ; i++ {
		_, err := os.Stat(stop)
		mine := err == nil
		msg := strconv.Itoa(i)
		if mine {
			msg += " stop"
		}
		for _, tag := range []int{1, 2} {
			if err := c.Send(ctx, peer, tag, []byte(msg)); err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
		}
		var f []string
		for _, tag := range []int{2, 1} {
			got, err := c.Recv(ctx, peer, tag)
			if err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
			f = strings.Fields(string(got.Data))
			if len(f) == 0 || f[0] != strconv.Itoa(i) {
				return fmt.Errorf("round %d tag %d: got %q from rank %d: lost, repeated or out of order", i, tag, got.Data, peer)
			}
		}
		fmt.Println("got", i)
		if mine || len(f) > 1 {
			return nil
		}
		if i%4 == 0 {
			if err := c.Barrier(ctx); err != nil {
				return fmt.Errorf("barrier after round %d: %w", i, err)
			}
		}
	}
}

// lastGot is the last "got N" of a stream rank's output (0: none).
func lastGot(path string) int {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if n, ok := strings.CutPrefix(lines[i], "got "); ok {
			v, _ := strconv.Atoi(n)
			return v
		}
	}
	return 0
}

// A comm job in bcs mode with a rank on each of two agents exchanges a
// numbered stream while first the compute agent and then the controller's
// agent are killed with SIGKILL and started again: the ranks resume their
// relay connections (no restart of the program), every message arrives
// exactly once and in order, and the job completes.
func TestCommJobSurvivesRelayRestarts(t *testing.T) {
	k := startKeptClusterMode(t, time.Minute, "bcs")
	stop := filepath.Join(k.dir, "stop")
	id, err := k.client().Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: 3 * time.Minute},
		Command: scenarioCommand("stream"), Env: []string{envStreamStop + "=" + stop}})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	outs := map[string]string{}
	for i, r := range j.Ranks {
		outs[r.Node] = k.outOf(r.Node, id, i)
	}
	t.Cleanup(func() { // before the directory goes
		if t.Failed() {
			for _, out := range outs {
				b, _ := os.ReadFile(strings.TrimSuffix(out, ".out") + ".err")
				t.Logf("%s: %s", strings.TrimSuffix(out, ".out")+".err", b)
			}
		}
	})
	progress := func(name string, after int, within time.Duration) {
		t.Helper()
		eventually(t, within, func() error {
			if n := lastGot(outs[name]); n <= after {
				return fmt.Errorf("%s's rank at message %d, want past %d", name, n, after)
			}
			return nil
		})
	}
	progress("w1", 5, 30*time.Second)
	for _, step := range []struct{ p, other *agentProc }{{k.w1, k.c0}, {k.c0, k.w1}} {
		step.p.kill9(t)
		at := max(lastGot(outs["c0"]), lastGot(outs["w1"]))
		step.p.args = append(step.p.args, "--join", step.other.ready.Gossip)
		restarted := time.Now()
		step.p.start(t, k.dir)
		progress(step.p.name, at, 60*time.Second)
		t.Logf("%s: messages flowing again %v after the agent's restart (at message %d)", step.p.name, time.Since(restarted).Round(time.Millisecond), at)
		progress(step.other.name, at+3, 30*time.Second)
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, k.client(), id, 60*time.Second, inState(api.Completed))
	for i, r := range j.Ranks {
		n := checkStreamRun(t, k.outOf(r.Node, id, i), i, r.Node)
		t.Logf("rank %d on %s: %d messages, each once, in order", i, r.Node, n)
	}
}

// checkStreamRun fails t unless the rank's output at path is one
// uninterrupted run of a stream test program: "start", "got 1", "got 2",
// …, "ok". It returns the number of rounds.
func checkStreamRun(t *testing.T, path string, rank int, node string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(f) < 3 || f[0] != "start" || f[len(f)-1] != "ok" {
		t.Fatalf("rank %d on %s: output %q, want one run: start, got 1…, ok", rank, node, b)
	}
	for n, line := range f[1 : len(f)-1] {
		if line != "got "+strconv.Itoa(n+1) {
			t.Fatalf("rank %d on %s: line %d is %q, want %q", rank, node, n+2, line, "got "+strconv.Itoa(n+1))
		}
	}
	return len(f) - 2
}
