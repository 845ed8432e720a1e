package strobe

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// A controller strobes four followers over real UDP on loopback at 2 ms
// for a few hundred slices. Loopback should lose nothing, but the test
// asserts the accounting rather than zero loss; latency and skew are
// reported, never asserted.
func TestUDPSlices(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	checkLeaks(t)
	const (
		agents = 4
		slices = 300
		period = 2 * time.Millisecond
	)
	log := zaptest.NewLogger(t)
	ctl, err := ListenUDP("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	var (
		addrs []string
		fs    []*Follower
		trs   []Transport
	)
	for i := range agents {
		tr, err := ListenUDP("127.0.0.1:0", log)
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
		addrs = append(addrs, tr.LocalAddr())
		fs = append(fs, NewFollower(FollowerConfig{
			Name: fmt.Sprintf("agent-%d", i), Transport: tr, Log: log,
			Switch: func(int) time.Duration { return 0 },
		}))
	}
	defer func() {
		for _, tr := range trs {
			tr.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, f := range fs {
		f.SetPeers(addrs)
		wg.Go(func() { _ = f.Run(ctx) })
	}
	defer wg.Wait()
	defer cancel()

	// The controller collects heartbeats on its socket.
	ctlHeard := map[string]int{}
	var ctlMu sync.Mutex
	var cwg sync.WaitGroup
	cwg.Go(func() {
		for p := range ctl.Packets() {
			if m, err := Unmarshal(p.Data); err == nil {
				if hb, ok := m.(*Heartbeat); ok {
					ctlMu.Lock()
					ctlHeard[hb.From]++
					ctlMu.Unlock()
				}
			}
		}
	})
	defer cwg.Wait()
	defer ctl.Close()

	sender := NewSender(ctl, 1, log)
	ticker, err := NewTicker(TickerConfig{Period: period})
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	var sendErr error
	tctx, tcancel := context.WithCancel(ctx)
	err = ticker.Run(tctx, func(tk Tick) {
		seq++
		sent, err := sender.Strobe(addrs, seq, int(seq%3), 1, 0)
		if err != nil && sendErr == nil {
			sendErr = err
		}
		ticker.Sent(tk, sent)
		if seq == slices {
			tcancel()
		}
	})
	tcancel()
	if err != context.Canceled || sendErr != nil {
		t.Fatalf("ticker: %v; send: %v", err, sendErr)
	}
	// Should the last strobes be lost, keep strobing until every follower
	// has applied the same final slice, so that "sent" is exact.
	for !allAt(fs, seq) {
		deadline := time.Now().Add(100 * time.Millisecond)
		for time.Now().Before(deadline) && !allAt(fs, seq) {
			time.Sleep(time.Millisecond)
		}
		if !allAt(fs, seq) {
			if seq > slices+100 {
				t.Fatalf("followers stuck below slice %d", seq)
			}
			seq++
			if _, err := sender.Strobe(addrs, seq, 0, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
	}

	records := map[string][]SliceRecord{}
	for _, f := range fs {
		st := f.Stats()
		if !st.Accounted() || st.Applied+st.Lost+st.FirstSeq-1 != seq {
			t.Errorf("%s: applied %d + lost %d + before first %d ≠ sent %d", f.cfg.Name, st.Applied, st.Lost, st.FirstSeq-1, seq)
		}
		if st.Malformed+st.Unknown+st.Stale != 0 || st.HeartbeatSendErrors != 0 {
			t.Errorf("%s: %+v", f.cfg.Name, st)
		}
		t.Logf("%s: applied %d lost %d late %d; heartbeats sent %d received %d; strobe→switch p50 %v p99 %v max %v",
			f.cfg.Name, st.Applied, st.Lost, st.Late, st.HeartbeatsSent, st.HeartbeatsReceived,
			st.Latency.P50, st.Latency.P99, st.Latency.Max)
		records[f.cfg.Name] = f.Records()
	}
	// Heartbeats from every agent reach every other (and the controller).
	for _, f := range fs {
		eventually(t, f.cfg.Name+" to hear every peer", func() bool {
			peers := f.Stats().Peers
			for _, o := range fs {
				if o != f && peers[o.cfg.Name].Count == 0 {
					return false
				}
			}
			return true
		})
	}
	eventually(t, "the controller to hear every agent", func() bool {
		ctlMu.Lock()
		defer ctlMu.Unlock()
		return len(ctlHeard) == agents
	})

	sk := Skew(records)
	if sk.Slices == 0 {
		t.Fatal("no slice seen by two agents")
	}
	ts := ticker.Stats()
	t.Logf("%d agents, %d slices at %v: skew p50 %v p99 %v max %v; strobe→switch p50 %v p99 %v max %v",
		agents, sk.Slices, period, sk.Skew.P50, sk.Skew.P99, sk.Skew.Max, sk.Latency.P50, sk.Latency.P99, sk.Latency.Max)
	t.Logf("ticker: %d ticks, %d skipped, %d overruns; wake late p50 %v p99 %v max %v; send late p50 %v p99 %v max %v",
		ts.Ticks, ts.Skipped, ts.Overruns, ts.WakeLate.P50, ts.WakeLate.P99, ts.WakeLate.Max,
		ts.SendLate.P50, ts.SendLate.P99, ts.SendLate.Max)
}

func allAt(fs []*Follower, seq uint64) bool {
	for _, f := range fs {
		recs := f.Records()
		if len(recs) == 0 || recs[len(recs)-1].Seq != seq {
			return false
		}
	}
	return true
}
