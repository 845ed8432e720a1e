package jss

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
)

func TestEventHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h eventHeap
	for i := 0; i < 5000; i++ {
		h.push(time.Duration(rng.IntN(50)), uint8(rng.IntN(3)), gang.JobID(i))
	}
	want := slices.Clone(h.items)
	slices.SortFunc(want, func(a, b event) int {
		switch {
		case a.before(&b):
			return -1
		case b.before(&a):
			return 1
		}
		return 0
	})
	for i := range want {
		got := h.pop()
		if got != want[i] {
			t.Fatalf("pop %d = %+v, want %+v", i, got, want[i])
		}
		if i > 0 {
			prev := want[i-1]
			if prev.at > got.at || prev.at == got.at && prev.class() > got.class() ||
				prev.at == got.at && prev.class() == got.class() && prev.seq() > got.seq() {
				t.Fatalf("out of order: %+v after %+v", got, prev)
			}
		}
	}
	if h.len() != 0 {
		t.Fatalf("heap not empty")
	}
}

// TestEventHeapInterleaved pushes and pops at random, as the simulator
// does (a pop, then pushes no earlier than it), and checks each pop
// against the least event of a plain list.
func TestEventHeapInterleaved(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h eventHeap
	var ref []event
	now := time.Duration(0)
	for i := range 20000 {
		if len(ref) == 0 || len(ref) < 300 && rng.IntN(2) == 0 {
			for range 1 + rng.IntN(3) {
				h.push(now+time.Duration(rng.IntN(30)), uint8(rng.IntN(3)), gang.JobID(i))
				ref = append(ref, h.items[slices.IndexFunc(h.items, func(e event) bool { return e.seq() == h.seq })])
			}
			continue
		}
		m := 0
		for k := range ref {
			if ref[k].before(&ref[m]) {
				m = k
			}
		}
		got := h.pop()
		if got != ref[m] {
			t.Fatalf("step %d: pop %+v, want %+v", i, got, ref[m])
		}
		ref = slices.Delete(ref, m, m+1)
		now = got.at
	}
}

func TestEqualTimesRunCompletionsThenArrivalsThenPasses(t *testing.T) {
	var h eventHeap
	// Pushed in the reverse of the order they must run in.
	h.push(10, classPass, 0)
	h.push(10, classArrival, 1)
	h.push(10, classCompletion, 2)
	h.push(10, classArrival, 3)
	h.push(9, classPass, 4)
	var got []gang.JobID
	for h.len() > 0 {
		got = append(got, h.pop().job)
	}
	if want := []gang.JobID{4, 2, 1, 3, 0}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v (time, then completion < arrival < pass, then insertion)", got, want)
	}
}

// TestArrivalBesideHeapKeepsOrder checks the loop's pending arrival, kept
// beside the heap, against a heap that holds every event (how the loop
// ran before): the same events come out in the same order, ties on the
// instant and class included. Events are pushed as an engine would, after
// an arrival: the next arrival, and completions and passes at the instant
// or later.
func TestArrivalBesideHeapKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	jobs := make([]Job, 3000)
	at := time.Duration(0)
	for i := range jobs {
		at += time.Duration(rng.IntN(3)) // many arrivals share an instant
		jobs[i] = Job{Job: gang.Job{Submit: at, Processors: 1}}
	}
	l := newLoop(SliceSource(jobs))
	var ref eventHeap
	pull := func() {
		if err := l.pull(); err != nil {
			t.Fatal(err)
		}
		if l.in.ok {
			// ref's counter stays in step with l.heap's, which numbered
			// the arrival: the same insertion number.
			ref.push(l.arrival.at, classArrival, l.arrival.job)
		}
	}
	push := func(at time.Duration, class uint8) {
		l.heap.push(at, class, 0)
		ref.push(at, class, 0)
	}
	pull()
	for n := 0; l.heap.len() > 0 || l.arrivalSet || l.passAtSet; n++ {
		got, want := l.next(), ref.pop()
		if got != want {
			t.Fatalf("event %d: %+v, want %+v", n, got, want)
		}
		if got.class() != classArrival {
			continue
		}
		pull()
		// Up to two completions or passes per arrival, at its instant
		// or soon after: a bounded number of events in all.
		for range rng.IntN(3) {
			push(got.at+time.Duration(rng.IntN(4)), uint8(rng.IntN(2))*2)
		}
	}
	if ref.len() != 0 {
		t.Fatalf("%d events left in the reference heap", ref.len())
	}
}

// TestPassBesideHeapKeepsOrder checks the loop's pending pass, kept beside
// the heap with the arrival, against a heap that holds every event and
// every pass asked for once per instant (how the loop ran before): the
// same events, in the same order, with the same insertion numbers.
func TestPassBesideHeapKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	jobs := make([]Job, 3000)
	at := time.Duration(0)
	for i := range jobs {
		at += time.Duration(rng.IntN(3))
		jobs[i] = Job{Job: gang.Job{Submit: at, Processors: 1}}
	}
	l := newLoop(SliceSource(jobs))
	var ref eventHeap
	pending := map[time.Duration]bool{} // ref's passes not yet out
	pull := func() {
		if err := l.pull(); err != nil {
			t.Fatal(err)
		}
		if l.in.ok {
			ref.push(l.arrival.at, classArrival, l.arrival.job)
		}
	}
	needPass := func(at time.Duration) {
		l.needPass(at)
		if !pending[at] {
			pending[at] = true
			ref.push(at, classPass, 0)
		}
	}
	pull()
	for n := 0; l.heap.len() > 0 || l.arrivalSet || l.passAtSet; n++ {
		got, want := l.next(), ref.pop()
		if got != want {
			t.Fatalf("event %d: %+v, want %+v", n, got, want)
		}
		switch got.class() {
		case classPass:
			l.passDue(got.at)
			delete(pending, got.at)
			// A wakeup later on, now and then, as a policy may ask.
			if rng.IntN(4) == 0 {
				needPass(got.at + time.Duration(1+rng.IntN(5)))
			}
		case classArrival:
			pull()
			needPass(got.at)
			for range rng.IntN(3) {
				c := got.at + time.Duration(rng.IntN(4))
				l.heap.push(c, classCompletion, 0)
				ref.push(c, classCompletion, 0)
			}
		case classCompletion:
			needPass(got.at)
		}
	}
	if ref.len() != 0 {
		t.Fatalf("%d events left in the reference heap", ref.len())
	}
}
