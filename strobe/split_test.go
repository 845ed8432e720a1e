package strobe

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func randomData(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// A heartbeat too large for a packet is split into packets that each fit
// and decode, and put back together in any order.
func TestSplitHeartbeatRoundTrip(t *testing.T) {
	data := randomData(100_000)
	hb := Heartbeat{From: "node-17", Epoch: 3, Seq: 9, Lost: 1, Data: data}
	parts, err := encodeHeartbeat(hb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 13 {
		t.Fatalf("%d parts for 100 KB", len(parts))
	}
	slices.Reverse(parts)
	var r reassembly
	for i, p := range parts {
		if len(p) > MaxPacketSize {
			t.Fatalf("part of %d bytes", len(p))
		}
		m, err := Unmarshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, complete, dropped := r.add(m.(*Heartbeat))
		if dropped || complete != (i == len(parts)-1) {
			t.Fatalf("part %d: complete %v dropped %v", i, complete, dropped)
		}
		if complete && !bytes.Equal(got, data) {
			t.Fatal("reassembled data differs")
		}
	}
	if r.bytes != 0 || len(r.pending) != 0 {
		t.Fatalf("reassembly holds %d bytes of %d heartbeats after completing", r.bytes, len(r.pending))
	}
	// Small heartbeats stay one packet without part numbers.
	if parts, err := encodeHeartbeat(Heartbeat{From: "a", Seq: 1, Data: []byte("x")}, nil); err != nil || len(parts) != 1 {
		t.Fatalf("small heartbeat: %d parts, %v", len(parts), err)
	}
	if _, err := encodeHeartbeat(Heartbeat{From: "a", Seq: 1, Data: make([]byte, MaxHeartbeatParts*MaxPacketSize)}, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized data: %v", err)
	}
}

// Reassembly drops duplicates, parts of an overtaken slice, and parts
// that disagree about the count; a newer slice replaces an incomplete one.
func TestSplitHeartbeatReassemblyRules(t *testing.T) {
	part := func(seq uint64, i, n uint16) *Heartbeat {
		return &Heartbeat{From: "b", Epoch: 1, Seq: seq, Part: i, Parts: n, Data: []byte{byte(seq), byte(i)}}
	}
	type step struct {
		hb                *Heartbeat
		complete, dropped bool
	}
	var r reassembly
	steps := []step{
		{part(5, 0, 3), false, false},
		{part(5, 0, 3), false, true},  // duplicate
		{part(5, 1, 4), false, true},  // another count
		{part(6, 1, 2), false, false}, // a newer slice replaces slice 5
		{part(5, 1, 3), false, true},  // slice 5 was overtaken
	}
	for i, s := range steps {
		_, complete, dropped := r.add(s.hb)
		if complete != s.complete || dropped != s.dropped {
			t.Fatalf("step %d: complete %v dropped %v, want %v %v", i, complete, dropped, s.complete, s.dropped)
		}
	}
	data, complete, _ := r.add(part(6, 0, 2))
	if !complete || !bytes.Equal(data, []byte{6, 0, 6, 1}) {
		t.Fatalf("slice 6: %v %v", complete, data)
	}
	if r.bytes != 0 {
		t.Fatalf("%d bytes held", r.bytes)
	}
}

// End to end: a follower whose heartbeat data exceeds a packet sends it
// split, and the peer's HeartbeatFunc gets it whole, once.
func TestFollowerSplitsLargeHeartbeats(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	ta, tb, ctl := n.Transport("a"), n.Transport("b"), n.Transport("ctl")
	defer ta.Close()
	defer tb.Close()
	defer ctl.Close()
	data := randomData(40_000)
	got := make(chan Heartbeat, 4)
	noSwitch := func(int) time.Duration { return 0 }
	a := NewFollower(FollowerConfig{Name: "a", Transport: ta, Switch: noSwitch,
		HeartbeatData: func(uint64, uint64) []byte { return data }})
	b := NewFollower(FollowerConfig{Name: "b", Transport: tb, Switch: noSwitch,
		Heartbeat: func(hb Heartbeat, _ int64) { got <- hb }})
	a.SetPeers([]string{"b"})
	runFollower(t, a)
	runFollower(t, b)
	if _, err := NewSender(ctl, 1, nil).Strobe([]string{"a"}, 1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case hb := <-got:
		if hb.From != "a" || hb.Seq != 1 || !bytes.Equal(hb.Data, data) || hb.Parts != 0 {
			t.Fatalf("got heartbeat from %s seq %d with %d bytes (parts %d)", hb.From, hb.Seq, len(hb.Data), hb.Parts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat")
	}
	parts := uint64((len(data) + heartbeatPiece - 1) / heartbeatPiece)
	eventually(t, "every part received", func() bool { return b.Stats().HeartbeatsReceived == parts })
	if st := b.Stats(); st.HeartbeatPartsDropped != 0 || st.Peers["a"].Seq != 1 {
		t.Fatalf("stats %+v", st)
	}
	select {
	case hb := <-got:
		t.Fatalf("a second delivery: %+v", hb)
	default:
	}
}
