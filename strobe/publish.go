package strobe

import (
	"runtime"
	"sync/atomic"
	"time"
)

// What the strobe path publishes for other goroutines, without a lock:
// a lock it shared with them would make a switch wait for any holder the
// scheduler preempted (on a host whose ranks keep every processor busy,
// for milliseconds). The strobe path is the single writer of each (under
// handleMu); readers never block it, and retry or skip what it rewrote
// while they read.

// sliceView is the slice sequence as Stats reports it: decided when a
// strobe is accepted, published only after its switch, so a reader who
// sees slice N as the last also sees its switch done and counted, and
// Applied + Lost always account for FirstSeq…LastSeq (Stats.Accounted).
// Publishing the fields one at a time let a reader see LastSeq 2 with
// Applied 1.
type sliceView struct {
	epoch, first, last, memberEpoch        uint64
	row                                    int
	applied, lost, epochApplied, epochLost uint64
	late, stale, epochs                    uint64
}

// publishedView is a sliceView behind a sequence lock: the writer makes
// seq odd, stores the fields, makes it even; a reader retries until it
// read every field between the same two even values. Every field is an
// atomic, so the race detector and the memory model agree.
type publishedView struct {
	seq atomic.Uint64
	f   [12]atomic.Uint64
}

func (p *publishedView) store(v sliceView) {
	p.seq.Add(1)
	for i, x := range [12]uint64{v.epoch, v.first, v.last, v.memberEpoch, uint64(v.row),
		v.applied, v.lost, v.epochApplied, v.epochLost, v.late, v.stale, v.epochs} {
		p.f[i].Store(x)
	}
	p.seq.Add(1)
}

func (p *publishedView) load() sliceView {
	for {
		s := p.seq.Load()
		if s&1 != 0 { // the writer is between its two stores: a few ns
			runtime.Gosched()
			continue
		}
		var x [12]uint64
		for i := range x {
			x[i] = p.f[i].Load()
		}
		if p.seq.Load() == s {
			return sliceView{epoch: x[0], first: x[1], last: x[2], memberEpoch: x[3], row: int(x[4]),
				applied: x[5], lost: x[6], epochApplied: x[7], epochLost: x[8], late: x[9], stale: x[10], epochs: x[11]}
		}
	}
}

// recordRing keeps the last len(slots) SliceRecords. Each slot carries a
// stamp: 2i+1 while record i is written into it, 2i+2 once it is there.
// A reader copies the records it finds stamped as expected and skips
// those overwritten meanwhile (the oldest, when the writer laps it).
type recordRing struct {
	slots []recordSlot
	n     atomic.Uint64 // records written
}

type recordSlot struct {
	stamp atomic.Uint64
	w     [9]atomic.Int64
}

func newRecordRing(n int) recordRing { return recordRing{slots: make([]recordSlot, n)} }

// add appends r; the single writer's.
func (q *recordRing) add(r SliceRecord) {
	i := q.n.Load()
	s := &q.slots[i%uint64(len(q.slots))]
	s.stamp.Store(2*i + 1)
	for k, x := range [9]int64{int64(r.Epoch), int64(r.Seq), int64(r.Row), int64(r.MemberEpoch),
		r.SentMono, r.DueMono, r.RecvMono, r.SwitchedMono, int64(r.SwitchCost)} {
		s.w[k].Store(x)
	}
	s.stamp.Store(2*i + 2)
	q.n.Store(i + 1)
}

// snapshot returns the records, oldest first, in a new slice.
func (q *recordRing) snapshot() []SliceRecord {
	n := q.n.Load()
	lo := n - min(n, uint64(len(q.slots)))
	out := make([]SliceRecord, 0, n-lo)
	for i := lo; i < n; i++ {
		s := &q.slots[i%uint64(len(q.slots))]
		if s.stamp.Load() != 2*i+2 {
			continue // being rewritten with a newer record
		}
		var x [9]int64
		for k := range x {
			x[k] = s.w[k].Load()
		}
		if s.stamp.Load() != 2*i+2 {
			continue
		}
		out = append(out, SliceRecord{Epoch: uint64(x[0]), Seq: uint64(x[1]), Row: int(x[2]), MemberEpoch: uint64(x[3]),
			SentMono: x[4], DueMono: x[5], RecvMono: x[6], SwitchedMono: x[7], SwitchCost: time.Duration(x[8])})
	}
	return out
}

// hbQueue hands heartbeats from the strobe path (the one producer) to the
// heartbeat sender (the one consumer) without a lock: the producer owns
// tail, the consumer head, and a slot belongs to whoever's side of them
// it is on.
type hbQueue struct {
	slots      [maxPendingHeartbeats]outgoingHeartbeat
	head, tail atomic.Uint64
}

// push queues out, or returns false when the queue is full.
func (q *hbQueue) push(out outgoingHeartbeat) bool {
	t := q.tail.Load()
	if t-q.head.Load() == uint64(len(q.slots)) {
		return false
	}
	q.slots[t%uint64(len(q.slots))] = out
	q.tail.Store(t + 1)
	return true
}

// drain calls send for every queued heartbeat, oldest first, then frees
// their slots (emptied: no peers or data kept alive).
func (q *hbQueue) drain(send func(*outgoingHeartbeat)) {
	h, t := q.head.Load(), q.tail.Load()
	for i := h; i < t; i++ {
		out := &q.slots[i%uint64(len(q.slots))]
		send(out)
		*out = outgoingHeartbeat{}
		q.head.Store(i + 1)
	}
}
