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
			if prev.at > got.at || prev.at == got.at && prev.class > got.class ||
				prev.at == got.at && prev.class == got.class && prev.seq > got.seq {
				t.Fatalf("out of order: %+v after %+v", got, prev)
			}
		}
	}
	if h.len() != 0 {
		t.Fatalf("heap not empty")
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

func TestCheckerRejectsBadDecisions(t *testing.T) {
	j := &Job{Job: gang.Job{Processors: 2, Submit: 5}, Number: 42}
	for _, c := range []struct {
		name string
		d    gang.Decision
		at   time.Duration
	}{
		{"before submit", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{0, 1}}, 4},
		{"wrong width", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{0}}, 5},
		{"outside machine", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{3, 4}}, 5},
		{"bad row", gang.Decision{Kind: gang.Start, Job: 1, Row: 1, Columns: []int{0, 1}}, 5},
		{"duplicate column", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{1, 1}}, 5},
	} {
		ck := newChecker(4, 1)
		if err := ck.started(&c.d, j, c.at); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	ck := newChecker(4, 1)
	if err := ck.started(&gang.Decision{Job: 1, Columns: []int{0, 1}}, j, 5); err != nil {
		t.Fatal(err)
	}
	if err := ck.started(&gang.Decision{Job: 2, Columns: []int{1, 2}}, j, 5); err == nil {
		t.Fatal("column 1 given twice")
	}
	ck.finished(1)
	if err := ck.started(&gang.Decision{Job: 3, Columns: []int{0, 1}}, j, 6); err != nil {
		t.Fatalf("after release: %v", err)
	}
}
