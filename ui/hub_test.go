package ui

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/telemetry"
)

// fakeSource is a slice clock that advances at every read, and a cluster
// of one job whose command is a secret.
type fakeSource struct {
	slices, states, stats atomic.Int64
	seq                   atomic.Uint64
}

func (f *fakeSource) Slice() (uint64, int) {
	f.slices.Add(1)
	s := f.seq.Add(1)
	return s, int(s % 2)
}

func (f *fakeSource) State(_ context.Context, stats bool, _ api.Cursor) (State, error) {
	f.states.Add(1)
	st := State{Jobs: []api.Job{{ID: 7, State: api.Running, Columns: []int{0, 1}, Ranks: []api.RankInfo{{Rank: 0}},
		Spec: api.JobSpec{Name: "j", Command: []string{"secret-command"}, Dir: "/secret/dir", Env: []string{"K=secret"}}}},
		Nodes: api.NodesReport{Nodes: []api.NodeInfo{{Name: "a0", Columns: []int{0, 1}}}}}
	if stats {
		f.stats.Add(1)
		st.Nodes.Nodes[0].Stats = &api.NodeStats{SlotReuses: 3}
	}
	return st, nil
}

func runHub(t *testing.T, src Source, cfg HubConfig) *Hub {
	t.Helper()
	h := NewHub(src, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Without a page the hub reads nothing; with one it reads the slice clock
// once per SliceEvery and the state once per StateEvery, whatever the
// number of pages; a page that does not read keeps only the latest event
// of each kind; no job's details reach a page.
func TestHubRatesAndLatestWins(t *testing.T) {
	src := &fakeSource{}
	cfg := HubConfig{SliceEvery: 5 * time.Millisecond, StateEvery: 50 * time.Millisecond, StatsEvery: time.Hour}
	h := runHub(t, src, cfg)

	time.Sleep(30 * time.Millisecond) // nothing happens without a page: nothing to wait for
	if n := src.slices.Load() + src.states.Load(); n != 0 {
		t.Fatalf("source read %d times with no page open", n)
	}

	var subs []*Sub
	for range 50 {
		s, leave := h.Subscribe()
		defer leave()
		subs = append(subs, s)
	}
	start := time.Now()
	waitFor(t, "ten slice readings", func() bool { return src.slices.Load() >= 10 })
	waitFor(t, "three state readings", func() bool { return src.states.Load() >= 3 })
	el := time.Since(start)
	// Bounded by the rates, not by the 50 pages (one reading serves all).
	if n, bound := src.slices.Load(), int64(el/cfg.SliceEvery)+2; n > bound {
		t.Errorf("%d slice readings in %v, bound %d", n, el, bound)
	}
	if n, bound := src.states.Load(), int64(el/cfg.StateEvery)+3; n > bound {
		t.Errorf("%d state readings in %v, bound %d", n, el, bound)
	}
	if n := src.stats.Load(); n != 1 {
		t.Errorf("statistics read %d times, want once per StatsEvery (1)", n)
	}

	// A page that never read: one state and one slice pending, the latest.
	evs := subs[0].Take()
	if len(evs) != 2 || !strings.HasPrefix(string(evs[0]), "event: state\n") || !strings.HasPrefix(string(evs[1]), "event: slice\n") {
		t.Fatalf("pending events: %q", evs)
	}
	state := string(evs[0])
	for _, secret := range []string{"secret-command", "/secret/dir", "K=secret", `"ranks"`} {
		if strings.Contains(state, secret) {
			t.Errorf("state event shows %s: %s", secret, state)
		}
	}
	if !strings.Contains(state, `"columns":[0,1]`) || !strings.Contains(state, `"slot_reuses":3`) {
		t.Errorf("state event lacks the job's place or the kept statistics: %s", state)
	}
	// Ten readings were published before this Take: the pending one
	// replaced the earlier ones (a queue would hold seq 1 first).
	var seq, row int
	if _, err := fmt.Sscanf(string(evs[1]), "event: slice\ndata: {\"seq\":%d,\"row\":%d}", &seq, &row); err != nil || seq < 10 {
		t.Errorf("pending slice event %q: seq %d (%v), want the latest, ≥ 10", evs[1], seq, err)
	}
}

// The event stream: text/event-stream, a state then slices whose numbers
// rise; it ends when the hub stops (an agent shutting down is not held up
// by open pages).
func TestEventStream(t *testing.T) {
	src := &fakeSource{}
	h := NewHub(src, HubConfig{SliceEvery: 5 * time.Millisecond, StateEvery: 20 * time.Millisecond, StatsEvery: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	srv := httptest.NewServer((&Server{Sessions: NewSessions(nil), Hub: h, Who: func(*http.Request) Me { return Me{} }}).Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var sawState bool
	var seqs []string
	for len(seqs) < 5 && sc.Scan() {
		line := sc.Text()
		if line == "event: state" {
			sawState = true
		}
		if strings.HasPrefix(line, `data: {"seq":`) {
			seqs = append(seqs, line)
		}
	}
	if !sawState || len(seqs) < 5 {
		t.Fatalf("state seen %v, slices %q (scan error %v)", sawState, seqs, sc.Err())
	}
	cancel() // the hub stops: the stream ends
	done := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream outlived its hub")
	}
}

// A node's lends (per local slot) land on the matrix cell of the slot's
// column, with the lends since the reading before.
func TestHubLentCells(t *testing.T) {
	h := NewHub(&fakeSource{}, HubConfig{})
	report := func(count uint64) api.NodesReport {
		return api.NodesReport{Nodes: []api.NodeInfo{
			{Name: "a0", Columns: []int{0, 1}, Stats: &api.NodeStats{}},
			{Name: "a1", Columns: []int{2, 3}, Stats: &api.NodeStats{Lends: []api.SlotLends{{Slot: 1, Row: 0, Count: count}, {Slot: 5, Row: 0, Count: 9}}}},
		}}
	}
	got := h.lentCells(report(4))
	want := []LentCell{{Node: "a1", Column: 3, Row: 0, Count: 4, Recent: 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first reading: %+v, want %+v (slot 5 has no column: left out)", got, want)
	}
	if got := h.lentCells(report(4)); len(got) != 1 || got[0].Recent != 0 {
		t.Fatalf("no lend since: %+v, want Recent 0", got)
	}
	if got := h.lentCells(report(7)); len(got) != 1 || got[0].Recent != 3 || got[0].Count != 7 {
		t.Fatalf("three lends since: %+v", got)
	}
}

// statsFail answers without statistics only.
type statsFail struct{ fakeSource }

func (f *statsFail) State(ctx context.Context, stats bool, since api.Cursor) (State, error) {
	if stats {
		f.stats.Add(1)
		return State{}, fmt.Errorf("an agent is slow")
	}
	return f.fakeSource.State(ctx, false, since)
}

// Statistics that cannot be read do not keep the queue and the matrix
// from the pages: the hub reads them alone, and tries the statistics
// again later.
func TestHubStatsFailureStillShowsState(t *testing.T) {
	src := &statsFail{}
	h := runHub(t, src, HubConfig{StateEvery: 5 * time.Millisecond, StatsEvery: 20 * time.Millisecond})
	sub, leave := h.Subscribe()
	defer leave()
	waitFor(t, "the statistics tried twice", func() bool { return src.stats.Load() >= 2 })
	for {
		<-sub.Wake()
		for _, ev := range sub.Take() {
			if strings.HasPrefix(string(ev), "event: state\n") {
				if !strings.Contains(string(ev), `"columns":[0,1]`) || strings.Contains(string(ev), `"error"`) {
					t.Fatalf("state event %s: want the job's place, no error", ev)
				}
				return
			}
		}
	}
}

// recordSource is one agent whose history grows by three slices at every
// statistics reading and answers only the records after the cursor, as
// GET /v1/nodes?since= does; restart empties its history.
type recordSource struct {
	fakeSource
	mu        sync.Mutex
	newest    uint64         // the agent's last slice
	asked     []string       // the cursor of each statistics reading
	delivered map[uint64]int // how often each slice's record was handed over
	restarted bool
}

func (f *recordSource) State(ctx context.Context, stats bool, since api.Cursor) (State, error) {
	st, _ := f.fakeSource.State(ctx, false, nil)
	if !stats {
		return st, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, since.String())
	ns := &api.NodeStats{}
	if !f.restarted {
		f.newest += 3
		ns.Strobe.Epoch, ns.Strobe.LastSeq = 1, f.newest
		for seq := since["a0"].Seq + 1; seq <= f.newest; seq++ {
			ns.Records = append(ns.Records, telemetry.SliceRecord{Epoch: 1, Seq: seq, Row: int(seq % 2), SwitchedMono: int64(seq) * 1e7})
			f.delivered[seq]++
		}
	}
	next := api.Cursor{}
	maps.Copy(next, since)
	if len(ns.Records) > 0 {
		next["a0"] = api.IDOf(ns.Records[len(ns.Records)-1])
	}
	st.Nodes.Nodes[0].Stats = ns
	st.Nodes.Cursor = next.String()
	return st, nil
}

// A statistics reading asks only for the records after those the hub has
// (each delivered once, the timeline growing by them); when the agent's
// history goes backwards the hub forgets its timeline and asks for all.
func TestHubReadsNewRecordsOnly(t *testing.T) {
	src := &recordSource{delivered: map[uint64]int{}}
	h := runHub(t, src, HubConfig{StateEvery: 2 * time.Millisecond, StatsEvery: 5 * time.Millisecond})
	_, leave := h.Subscribe()
	defer leave()
	asked := func() []string {
		src.mu.Lock()
		defer src.mu.Unlock()
		return slices.Clone(src.asked)
	}
	waitFor(t, "four statistics readings", func() bool { return len(asked()) >= 4 })
	src.mu.Lock()
	src.restarted = true
	src.mu.Unlock()
	waitFor(t, "a reading after the restart with no cursor", func() bool {
		a := asked()
		return slices.Contains(a[4:], "")
	})
	got := asked()
	if got[0] != "" {
		t.Errorf("first reading asked with cursor %q, want none", got[0])
	}
	for i := 1; i < 4; i++ {
		if want := fmt.Sprintf("a0:1.%d", 3*i); got[i] != want {
			t.Errorf("reading %d asked since %q, want %q (the newest record of the reading before)", i, got[i], want)
		}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for seq := uint64(1); seq <= 12; seq++ {
		if n := src.delivered[seq]; n != 1 {
			t.Errorf("slice %d's record handed over %d times, want once", seq, n)
		}
	}
}
