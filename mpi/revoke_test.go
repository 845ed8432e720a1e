package mpi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/telemetry"
)

// Relays switched to bcs while a job runs take its channels back
// (docs/mpi.md, "Taking channels back"): four ranks on two relays
// (node/testdata/mpistream.c: pairs 0-1 and 2-3 across the nodes, an
// Allreduce of all four every round, so same-node pairs carry messages
// too) exchange at full speed on channels, the relays switch, and the
// ranks go on through the relays: every message once and in order
// (mpistream checks), no byte on a channel any more once the switch has
// settled, and every message counted once, sent and delivered.
//
// wildstream.c does the same with wildcard receives: every rank sends each
// other rank a numbered message a round and receives them from
// MPI_ANY_SOURCE, checking each source's order across the switch.
func TestChannelsTakenBackAtBCS(t *testing.T) {
	for _, src := range []string{"node/testdata/mpistream.c", "mpi/testdata/wildstream.c"} {
		t.Run(strings.TrimSuffix(filepath.Base(src), ".c"), func(t *testing.T) { takenBack(t, program(t, src)) })
	}
}

// takenBack is TestChannelsTakenBackAtBCS with program prog.
func takenBack(t *testing.T, prog string) {
	c := newCluster(t, 2, false)
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	c.env = []string{"COSCHED_TEST_STREAM_STOP=" + stop}
	id := c.nextID
	out := func(rank int) string { return filepath.Join(dir, fmt.Sprintf("rank-%d.out", rank)) }
	place := []int{0, 1, 0, 1}
	done := make(chan []rankResult, 1)
	go func() {
		done <- c.run(t, "/bin/sh", place, 2*time.Minute, "-c", `exec "$0" >"$1-$COSCHED_RANK.out"`, prog, filepath.Join(dir, "rank"))
	}()
	stats := func() telemetry.RelayJobStats {
		sum, _ := jobTraffic(c.relays, id)
		return sum
	}
	progress := func(after int) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			low := lastRound(out(0))
			for rk := range place {
				low = min(low, lastRound(out(rk)))
			}
			if low > after {
				return
			}
			select {
			case res := <-done:
				for _, r := range res {
					t.Logf("rank %d: exit %d, at round %d; stderr %q", r.rank, r.exit, lastRound(out(r.rank)), r.err)
				}
				t.Fatal("the job ended early")
			default:
			}
			if time.Now().After(deadline) {
				os.WriteFile(stop, nil, 0o644)
				for _, r := range <-done {
					t.Logf("rank %d: exit %d, at round %d; stderr %q", r.rank, r.exit, lastRound(out(r.rank)), r.err)
				}
				t.Fatalf("the ranks not all past round %d after 60 s", after)
			}
		}
	}
	progress(20)
	before := stats()
	if before.ChannelBytes == 0 {
		t.Fatalf("before the switch: %+v, want messages on channels", before)
	}
	at := lastRound(out(0))
	c.switchToBCS(t, 4*time.Millisecond)
	progress(at + 10) // settled: every rank has drained its channels
	settled := stats()
	progress(at + 30)
	after := stats()
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	for _, r := range res {
		b, _ := os.ReadFile(out(r.rank))
		f := strings.Split(strings.TrimSpace(string(b)), "\n")
		bad := r.exit != 0 || len(f) < 3 || f[0] != "start" || f[len(f)-1] != "ok"
		for n := 1; !bad && n < len(f)-1; n++ {
			bad = f[n] != "got "+strconv.Itoa(n)
		}
		if bad {
			t.Fatalf("rank %d: exit %d, want 0 and one run (start, got 1…, ok); stderr %q; output ends %q", r.rank, r.exit, r.err, f[max(0, len(f)-5):])
		}
	}
	end := stats()
	t.Logf("switched at round %d of %d\nbefore %+v\nsettled %+v\nafter %+v\nend %+v", at, lastRound(out(0)), before, settled, after, end)
	if after.ChannelBytes != settled.ChannelBytes {
		t.Errorf("%d bytes more on channels between rounds %d and %d, under bcs", after.ChannelBytes-settled.ChannelBytes, at+10, at+30)
	}
	if after.SentBytes-after.ChannelBytes <= settled.SentBytes-settled.ChannelBytes {
		t.Errorf("no message through the relays after the switch: settled %+v, after %+v", settled, after)
	}
	if end.Sent != end.Delivered || end.SentBytes != end.DeliveredBytes {
		t.Errorf("counted %+v: sent and delivered differ", end)
	}
}
