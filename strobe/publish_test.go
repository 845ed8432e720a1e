package strobe

import (
	"sync"
	"testing"
)

// The record ring keeps the last records in order, oldest first, after
// it wraps; a reader beside the writer only ever sees whole records, in
// order (each record's fields are derived from its Seq, so a torn one
// shows).
func TestRecordRingWrapsAndReadsWhole(t *testing.T) {
	q := newRecordRing(8)
	rec := func(i uint64) SliceRecord {
		return SliceRecord{Epoch: 1, Seq: i, Row: int(i % 3), SentMono: int64(i) * 10, RecvMono: int64(i) * 20, SwitchedMono: int64(i) * 30}
	}
	if got := q.snapshot(); len(got) != 0 {
		t.Fatalf("empty ring: %v", got)
	}
	for i := uint64(1); i <= 20; i++ {
		q.add(rec(i))
	}
	got := q.snapshot()
	if len(got) != 8 || got[0].Seq != 13 || got[7].Seq != 20 {
		t.Fatalf("after 20 records in 8 slots: %d records, %+v … %+v", len(got), got[0], got[len(got)-1])
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(21); i <= 20000; i++ {
			q.add(rec(i))
		}
		close(done)
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		prev := uint64(0)
		for _, r := range q.snapshot() {
			if r != rec(r.Seq) {
				t.Fatalf("torn record: %+v", r)
			}
			if r.Seq <= prev {
				t.Fatalf("records out of order: %d after %d", r.Seq, prev)
			}
			prev = r.Seq
		}
	}
	wg.Wait()
}

// The heartbeat queue hands heartbeats over in order, refuses one when
// full (the caller counts it dropped), and frees its slots as they are
// sent.
func TestHeartbeatQueueOrderAndFull(t *testing.T) {
	var q hbQueue
	for i := range maxPendingHeartbeats {
		if !q.push(outgoingHeartbeat{hb: Heartbeat{Seq: uint64(i + 1)}, peers: []string{"p"}}) {
			t.Fatalf("push %d of %d refused", i+1, maxPendingHeartbeats)
		}
	}
	if q.push(outgoingHeartbeat{hb: Heartbeat{Seq: 999}}) {
		t.Fatal("a full queue took another heartbeat")
	}
	var seqs []uint64
	q.drain(func(o *outgoingHeartbeat) { seqs = append(seqs, o.hb.Seq) })
	if len(seqs) != maxPendingHeartbeats || seqs[0] != 1 || seqs[len(seqs)-1] != maxPendingHeartbeats {
		t.Fatalf("drained %v", seqs)
	}
	for i := range q.slots {
		if q.slots[i].peers != nil {
			t.Fatalf("slot %d still holds its peers after being sent", i)
		}
	}
	if !q.push(outgoingHeartbeat{hb: Heartbeat{Seq: 1000}}) {
		t.Fatal("a drained queue refused a heartbeat")
	}
}

// The published slice view is read whole beside its writer: applied +
// lost always accounts for first…last (the invariant Stats.Accounted
// relies on).
func TestPublishedViewReadsWhole(t *testing.T) {
	var p publishedView
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(1); i <= 50000; i++ {
			lost := i / 7
			p.store(sliceView{epoch: 1, first: 1, last: i, applied: i - lost, lost: lost, row: int(i % 2)})
		}
		close(done)
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		v := p.load()
		if v.last != 0 && (v.applied+v.lost != v.last-v.first+1 || v.row != int(v.last%2)) {
			t.Fatalf("torn view: %+v", v)
		}
	}
	wg.Wait()
}
