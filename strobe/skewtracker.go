package strobe

import "sync"

// SkewTracker computes the cluster's switch skew online, from the switch
// times that heartbeats carry, so that the controller can export it
// without collecting every agent's records. A slice stays open until a
// switch of a slice closeAfter later (or of a newer epoch) is observed;
// then its skew (latest − earliest switch) joins the history. A heartbeat
// that is lost or comes after its slice closed only narrows that slice's
// span: the tracker under-reports rather than invents skew. Safe for
// concurrent use.
type SkewTracker struct {
	mu     sync.Mutex
	open   map[sliceKey]*skewSpan
	epoch  uint64 // newest epoch observed
	newest uint64 // newest seq observed in it
	skews  ring[int64]
	closed uint64 // slices closed with at least two switches
}

type sliceKey struct{ epoch, seq uint64 }

type skewSpan struct {
	n        int
	min, max int64
}

// closeAfter is how many slices a slice waits for late heartbeats.
const closeAfter = 2

// maxOpen bounds the open slices whatever the input (names and numbers
// come off the network).
const maxOpen = 64

// NewSkewTracker keeps the skew of the last history slices (0 = 4096).
func NewSkewTracker(history int) *SkewTracker {
	if history <= 0 {
		history = 4096
	}
	return &SkewTracker{open: map[sliceKey]*skewSpan{}, skews: newRing[int64](history)}
}

// Observe records that some agent finished switching to slice (epoch,
// seq) at switchedMono.
func (t *SkewTracker) Observe(epoch, seq uint64, switchedMono int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case epoch < t.epoch:
		return // a replaced controller's slice
	case epoch > t.epoch:
		t.epoch, t.newest = epoch, seq
	case seq > t.newest:
		t.newest = seq
	}
	k := sliceKey{epoch, seq}
	if s := t.open[k]; s != nil {
		s.n++
		s.min, s.max = min(s.min, switchedMono), max(s.max, switchedMono)
	} else if seq+closeAfter > t.newest && len(t.open) < maxOpen {
		t.open[k] = &skewSpan{n: 1, min: switchedMono, max: switchedMono}
	}
	for k, s := range t.open {
		if k.epoch < t.epoch || k.seq+closeAfter <= t.newest {
			delete(t.open, k)
			if s.n >= 2 {
				t.skews.add(s.max - s.min)
				t.closed++
			}
		}
	}
}

// Stats returns the skew over the recent closed slices (Slices counts
// every slice closed so far; Skew covers the last history of them).
func (t *SkewTracker) Stats() SkewStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return SkewStats{Slices: int(t.closed), Skew: distOf(t.skews.snapshot())}
}
