package clusterkey

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	k := testKey(1)
	pkt, err := k.Seal([]byte("prefix"), Envelope{Sender: 7, Seq: 42}, []byte("strobe"))
	if err != nil {
		t.Fatal(err)
	}
	pkt = pkt[len("prefix"):]
	if len(pkt) != len("strobe")+Overhead {
		t.Errorf("sealed %d bytes, want %d", len(pkt), len("strobe")+Overhead)
	}
	e, payload, err := k.Open(pkt)
	if err != nil || e != (Envelope{Sender: 7, Seq: 42}) || string(payload) != "strobe" {
		t.Fatalf("Open: %+v %q %v", e, payload, err)
	}
	for i := range pkt {
		bad := bytes.Clone(pkt)
		bad[i] ^= 1
		if _, _, err := k.Open(bad); err == nil {
			t.Errorf("flipping a bit of byte %d went unnoticed", i)
		}
	}
	if _, _, err := testKey(2).Open(pkt); !errors.Is(err, ErrForged) {
		t.Errorf("wrong key: %v, want ErrForged", err)
	}
	if _, _, err := k.Open(pkt[:Overhead-1]); !errors.Is(err, ErrNotSealed) {
		t.Errorf("short packet: %v", err)
	}
	if _, err := k.Seal(nil, Envelope{}, make([]byte, MaxPacket)); err == nil {
		t.Error("Seal accepted a payload larger than a packet")
	}
}

func TestReplayWindow(t *testing.T) {
	var w ReplayWindow
	steps := []struct {
		seq  uint64
		want bool
	}{
		{100, true}, {100, false}, // replay
		{99, true}, {99, false}, // late but new, then replayed
		{105, true}, {101, true}, {103, true}, {101, false},
		{105 + WindowSize - 1, true}, // the window now holds 105 … 168
		{105, false},                 // in the window, seen
		{106, true},                  // in the window, unseen
		{104, false},                 // fell out of the window
		{1 << 40, true}, {105 + WindowSize, false},
	}
	for i, s := range steps {
		if got := w.Accept(s.seq); got != s.want {
			t.Errorf("step %d: Accept(%d) = %v, want %v", i, s.seq, got, s.want)
		}
	}
}

// TestReplayWindowModel checks the window against a map of everything
// accepted, on a deterministic pseudo-random walk.
func TestReplayWindowModel(t *testing.T) {
	var w ReplayWindow
	seen := map[uint64]bool{}
	var top uint64
	x := uint64(12345)
	for range 20000 {
		x = x*6364136223846793005 + 1442695040888963407
		seq := 1000 + (x>>33)%3000
		want := !seen[seq] && (len(seen) == 0 || seq+WindowSize > top)
		if got := w.Accept(seq); got != want {
			t.Fatalf("Accept(%d) with top %d = %v, want %v", seq, top, got, want)
		}
		if want {
			seen[seq] = true
			top = max(top, seq)
		}
	}
}

func FuzzOpen(f *testing.F) {
	k := testKey(1)
	pkt, _ := k.Seal(nil, Envelope{Sender: 1, Seq: 2}, []byte("hello"))
	f.Add(pkt)
	f.Add([]byte{})
	f.Add([]byte("cK\x01"))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		e, payload, err := k.Open(pkt)
		if err != nil {
			return
		}
		again, err := k.Seal(nil, e, payload)
		if err != nil || !bytes.Equal(again, pkt) {
			t.Fatalf("opened %x but it re-seals as %x (%v)", pkt, again, err)
		}
	})
}

// BenchmarkOpen is the receive-side cost of authenticating a strobe-sized
// packet; BenchmarkOpenBaseline copies the same bytes (what a receiver
// does anyway), for the ratio.
func BenchmarkOpen(b *testing.B) {
	k := testKey(1)
	pkt, _ := k.Seal(nil, Envelope{Sender: 1, Seq: 2}, make([]byte, 64))
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if _, _, err := k.Open(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenBaseline(b *testing.B) {
	pkt := make([]byte, 64+Overhead)
	dst := make([]byte, len(pkt))
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		copy(dst, pkt)
	}
}

func BenchmarkVerifyToken(b *testing.B) {
	k := testKey(1)
	s, _ := k.Mint(1, 1, t0, DefaultTTL, bytes.NewReader(make([]byte, 16)))
	for b.Loop() {
		if _, err := k.Verify(s, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSenderID(t *testing.T) {
	if a, b := SenderID("n1"), SenderID("n1"); a != b {
		t.Errorf("SenderID(n1) = %x, then %x", a, b)
	}
	if SenderID("n1") == SenderID("n2") {
		t.Error("SenderID does not tell n1 from n2")
	}
	k := testKey(1)
	pkt, _ := k.Seal(nil, Envelope{Sender: 1 << 60, Seq: 1 << 62}, nil)
	if e, _, err := k.Open(pkt); err != nil || e.Sender != 1<<60 || e.Seq != 1<<62 {
		t.Errorf("64-bit sender and seq: %+v %v", e, err)
	}
}
