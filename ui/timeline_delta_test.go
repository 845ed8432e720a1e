package ui

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// tlPage is what a page makes of the timeline events: the slices it has
// (by the controller's seq: one agent, one epoch in these tests).
type tlPage struct {
	n      uint64
	seqs   map[int64]bool
	fetchs int // full forms asked for after a gap
}

func decodeTimeline(t *testing.T, b []byte) TimelineEvent {
	t.Helper()
	var ev TimelineEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("timeline %q: %v", b, err)
	}
	return ev
}

// seqsOf decodes an event's records into their slices' seqs.
func seqsOf(ev TimelineEvent) []int64 {
	var out []int64
	var seq int64
	for _, r := range ev.Recs {
		seq += r[4]
		out = append(out, seq)
	}
	return out
}

// apply takes an event as the page does: the full form replaces, the next
// delta adds (each record new to the page), a gap fetches the full form.
func (p *tlPage) apply(t *testing.T, h *Hub, ev TimelineEvent) {
	t.Helper()
	switch {
	case ev.Full:
		p.n, p.seqs = ev.N, map[int64]bool{}
		for _, s := range seqsOf(ev) {
			p.seqs[s] = true
		}
	case ev.N <= p.n:
	case ev.N == p.n+1 && p.seqs != nil:
		for _, s := range seqsOf(ev) {
			if p.seqs[s] {
				t.Errorf("delta %d repeats slice %d", ev.N, s)
			}
			p.seqs[s] = true
		}
		p.n = ev.N
	default:
		p.fetchs++
		full := decodeTimeline(t, h.Timeline())
		if !full.Full || full.N < ev.N {
			t.Fatalf("after a gap (had %d, got %d) GET /ui/timeline gave n %d full %v, want the full form of %d or later", p.n, ev.N, full.N, full.Full, ev.N)
		}
		p.apply(t, h, full)
	}
}

func timelineEvents(evs [][]byte) [][]byte {
	var out [][]byte
	for _, ev := range evs {
		if d, ok := strings.CutPrefix(string(ev), "event: timeline\ndata: "); ok {
			out = append(out, []byte(strings.TrimSpace(d)))
		}
	}
	return out
}

// The hub sends a page the timeline's full form first, then numbered
// deltas of the records new to it, each record once; a page that missed
// one (it read slowly) sees a gap and the full form brings it level; after
// an agent's history went backwards the next event is the full form.
func TestHubTimelineDeltas(t *testing.T) {
	src := &recordSource{delivered: map[uint64]int{}}
	h := runHub(t, src, HubConfig{StateEvery: 2 * time.Millisecond, StatsEvery: 5 * time.Millisecond})
	fast, leave := h.Subscribe()
	defer leave()
	var page tlPage
	var deltas int
	deadline := time.Now().Add(time.Minute)
	for deltas < 4 {
		<-fast.Wake()
		for _, b := range timelineEvents(fast.Take()) {
			ev := decodeTimeline(t, b)
			if ev.N == 1 && !ev.Full {
				t.Fatalf("the first timeline event is a delta: want the full form")
			}
			if !ev.Full {
				deltas++
				if len(ev.Recs) != 3 {
					t.Errorf("delta %d: %d records, want the reading's 3 new ones", ev.N, len(ev.Recs))
				}
			}
			page.apply(t, h, ev)
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for four deltas")
		}
	}
	// A page opened now gets the full form at once, with every slice (the
	// source held still meanwhile, so that no delta replaces it before it
	// is taken: what a page that reads slowly would see).
	var ev TimelineEvent
	var late *Sub
	for range 10 {
		src.mu.Lock()
		sub, leaveLate := h.Subscribe()
		evs := timelineEvents(sub.Take())
		src.mu.Unlock()
		if len(evs) != 1 {
			t.Fatalf("a new page's pending timeline events: %d, want 1", len(evs))
		}
		if ev = decodeTimeline(t, evs[0]); ev.Full {
			late = sub
			defer leaveLate()
			break
		}
		leaveLate()
	}
	if late == nil || len(seqsOf(ev)) < 3*4 {
		t.Fatalf("a new page's first timeline event: full %v with %d slices, want the full form (12 slices or more)", ev.Full, len(seqsOf(ev)))
	}
	for i, s := range seqsOf(ev) {
		if s != int64(i+1) {
			t.Fatalf("the full form's slices %v: want 1, 2, 3… each once", seqsOf(ev))
		}
	}
	// The late page stops reading for two events: the next it takes is a
	// delta after a gap, and the full form brings it level.
	var slow tlPage
	slow.apply(t, h, ev)
	waitFor(t, "two more timeline events", func() bool { return decodeTimeline(t, h.Timeline()).N >= slow.n+2 })
	evs := timelineEvents(late.Take())
	if len(evs) != 1 {
		t.Fatalf("a slow page's pending timeline events: %d, want only the latest", len(evs))
	}
	if ev := decodeTimeline(t, evs[0]); ev.Full || ev.N < slow.n+2 {
		t.Fatalf("a slow page's next event: n %d full %v, want a delta after a gap (it had %d)", ev.N, ev.Full, slow.n)
	} else {
		slow.apply(t, h, ev)
	}
	if slow.fetchs != 1 {
		t.Errorf("the slow page fetched the full form %d times, want once", slow.fetchs)
	}
	full := decodeTimeline(t, h.Timeline())
	if full.N == slow.n && len(full.Recs) != len(slow.seqs) {
		t.Errorf("after the gap the page has %d slices, the hub %d", len(slow.seqs), len(full.Recs))
	}
	// The fast page, reading on, has each slice once, as the hub does.
	for {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the page to be level with the hub")
		}
		<-fast.Wake()
		for _, b := range timelineEvents(fast.Take()) {
			page.apply(t, h, decodeTimeline(t, b))
		}
		full := decodeTimeline(t, h.Timeline())
		if full.N != page.n {
			continue
		}
		if got := len(page.seqs); got != len(full.Recs) {
			t.Fatalf("the page's deltas add up to %d slices, the hub's full form has %d", got, len(full.Recs))
		}
		for i := int64(1); i <= int64(len(full.Recs)); i++ {
			if !page.seqs[i] {
				t.Fatalf("the page lacks slice %d", i)
			}
		}
		break
	}
	// The agent restarts (its history empty): the hub starts its timeline
	// again and its next event is the full form, empty.
	src.mu.Lock()
	src.restarted = true
	src.mu.Unlock()
	for {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the full form after the restart")
		}
		<-fast.Wake()
		for _, b := range timelineEvents(fast.Take()) {
			if ev := decodeTimeline(t, b); ev.Full {
				if len(ev.Recs) != 0 {
					t.Fatalf("after the restart: the full form with %d records, want none", len(ev.Recs))
				}
				return
			}
		}
	}
}
