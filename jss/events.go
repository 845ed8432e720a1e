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
	at time.Duration
	// order is the class in the top byte and the insertion order (the
	// final tie-break, so runs are deterministic) below it: one comparison
	// orders both, and the event is 24 bytes, not 32. 2^56 insertions
	// are more than any run makes.
	order uint64
	job   gang.JobID
}

func eventOrder(class uint8, seq uint64) uint64 { return uint64(class)<<56 | seq }

func (e event) class() uint8 { return uint8(e.order >> 56) }
func (e event) seq() uint64  { return e.order & (1<<56 - 1) }

func (a *event) before(b *event) bool {
	return a.at < b.at || a.at == b.at && a.order < b.order
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
	h.items = append(h.items, event{at: at, order: eventOrder(class, h.seq), job: job})
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
