package comm

import (
	"fmt"
	"testing"
)

// A sender keeps each numbered message until it is acknowledged, in
// order, whatever order the acknowledgements come in, and a repeated
// acknowledgement changes nothing.
func TestSentLogKeepsUnacknowledged(t *testing.T) {
	var l sentLog
	buf := []byte("a")
	for range 5 {
		l.add(1, ContextUser, buf)
	}
	buf[0] = 'z' // the caller reuses its buffer: the kept copy stays
	l.ack([]uint64{2, 4})
	l.ack([]uint64{4, 9})
	var left []uint64
	for _, m := range l.unacked {
		left = append(left, m.seq)
		if string(m.data) != "a" {
			t.Fatalf("message %d kept as %q", m.seq, m.data)
		}
	}
	if fmt.Sprint(left) != "[1 3 5]" || l.last != 5 {
		t.Fatalf("unacked %v, last %d", left, l.last)
	}
	l.ack([]uint64{1, 3, 5})
	if len(l.unacked) != 0 || l.add(1, 0, nil) != 6 {
		t.Fatalf("after every ack: %+v", l)
	}
}

// A receiver's account of one source: a floor and what it got above it,
// each number once.
func TestGotLogFloorAndAbove(t *testing.T) {
	var g gotLog
	for _, tc := range []struct {
		seq  uint64
		want bool
	}{{1, true}, {3, true}, {5, true}, {3, false}, {1, false}, {2, true}, {4, true}, {6, true}, {8, true}} {
		if got := g.got(tc.seq); got != tc.want {
			t.Fatalf("got(%d) = %v, want %v", tc.seq, got, tc.want)
		}
	}
	if s := g.stream(7); s.Src != 7 || s.Floor != 6 || fmt.Sprint(s.Above) != "[8]" {
		t.Fatalf("stream %+v", s)
	}
}
