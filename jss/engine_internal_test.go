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
