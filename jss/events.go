package jss

import (
	"time"

	"github.com/cosched/cosched/gang"
)

// Event classes, in the order they run at equal times: jobs that end free
// their processors before new jobs are queued, and both happen before the
// scheduling pass that sees them.
const (
	classCompletion uint8 = iota
	classArrival
	classPass
)

type event struct {
	at    time.Duration
	class uint8
	seq   uint64 // insertion order: the final tie-break, so runs are deterministic
	job   gang.JobID
}

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.class != b.class {
		return a.class < b.class
	}
	return a.seq < b.seq
}

// eventHeap is a binary min-heap of events by (at, class, seq). It is
// written out rather than using container/heap to avoid an interface call
// and an allocation per event on the simulator's hot path.
type eventHeap struct {
	items []event
	seq   uint64
}

func (h *eventHeap) len() int { return len(h.items) }

func (h *eventHeap) push(at time.Duration, class uint8, job gang.JobID) {
	h.seq++
	h.items = append(h.items, event{at: at, class: class, seq: h.seq, job: job})
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.items[i].before(&h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *eventHeap) pop() event {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && h.items[r].before(&h.items[l]) {
			m = r
		}
		if !h.items[m].before(&h.items[i]) {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
