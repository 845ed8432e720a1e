package relay

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
)

// TestOnBlockedInOrderFromReaders: the OnBlocked calls a rank's frames
// cause (the receiver's Wait, the sender's Send that unblocks it) and the
// agent's calls cause (a job removed) are made one at a time and in the
// order the changes happened, and a callback that calls back into the
// relay does not deadlock it (no lock of the relay's is held during the
// calls): what moving the calls to other goroutines must keep.
func TestOnBlockedInOrderFromReaders(t *testing.T) {
	var (
		mu         sync.Mutex
		events     = map[string][]bool{}
		inCall     atomic.Int32
		concurrent atomic.Int32
		r          *Relay
		ready      = make(chan struct{})
	)
	r = newRelayWith(t, "n0", func(cfg *Config) {
		cfg.OnBlocked = func(job int64, rank int, blocked bool) {
			if inCall.Add(1) != 1 {
				concurrent.Add(1)
			}
			defer inCall.Add(-1)
			<-ready
			r.Stats() // takes the relay's lock: would deadlock if held
			time.Sleep(50 * time.Microsecond)
			mu.Lock()
			k := fmt.Sprintf("%d/%d", job, rank)
			events[k] = append(events[k], blocked)
			mu.Unlock()
		}
	})
	close(ready)
	if err := r.AddJob(1, []string{"n0", "n0"}); err != nil {
		t.Fatal(err)
	}
	if err := r.AddJob(2, []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	a, b := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	c := dialRank(t, r, 2, 0, 1)
	const rounds = 50
	for i := range rounds {
		req := b.post(0, i)
		b.send(comm.FrameWait, &comm.Wait{Reqs: []uint64{req}})
		// The Send must find the receive waiting (else b never blocks).
		eventually(t, "rank 1 blocked", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(events["1/1"]) == 2*i+1
		})
		a.msg(1, i, "x")
		if d := b.deliver(); d.Req != req || d.Tag != i {
			t.Fatalf("round %d: deliver %+v, want req %d", i, d, req)
		}
	}
	// Job 2's rank blocks (its reader reports it); the agent's RemoveJob
	// ends it (the notifier goroutine, or the reader ending, reports it).
	req := c.post(0, 0)
	c.send(comm.FrameWait, &comm.Wait{Reqs: []uint64{req}})
	eventually(t, "job 2's rank blocked", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events["2/0"]) == 1
	})
	r.RemoveJob(2)
	eventually(t, "every block event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events["1/1"]) == 2*rounds && len(events["2/0"]) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	for k, evs := range events {
		for i, b := range evs {
			if b != (i%2 == 0) {
				t.Fatalf("rank %s: event %d is blocked=%v (events out of order: %v)", k, i, b, evs)
			}
		}
	}
	if len(events["1/0"]) != 0 {
		t.Fatalf("rank 1/0 never waited but was reported: %v", events["1/0"])
	}
	if n := concurrent.Load(); n != 0 {
		t.Fatalf("%d OnBlocked calls overlapped another", n)
	}
}
