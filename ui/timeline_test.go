package ui

import (
	"slices"
	"testing"

	"github.com/cosched/cosched/telemetry"
)

// Two nodes' records, read twice (overlapping), make one lane per node
// with each slice once, the skew of each slice, and only the newest
// slices once over the bound.
func TestTimeline(t *testing.T) {
	const ms = int64(1e6)
	rec := func(seq uint64, lag int64) telemetry.SliceRecord {
		sent := int64(seq) * 100 * ms
		return telemetry.SliceRecord{Epoch: 1, Seq: seq, Row: int(seq % 2), SentMono: sent, RecvMono: sent + lag, SwitchedMono: sent + lag + ms/10}
	}
	tl := newTimeline(4)
	tl.add(map[string][]telemetry.SliceRecord{"a0": {rec(1, 0), rec(2, 0)}, "a1": {rec(1, ms), rec(2, ms)}})
	tl.add(map[string][]telemetry.SliceRecord{"a0": {rec(2, 0), rec(3, 0)}, "a1": {rec(2, ms), rec(3, ms)}})
	v := tl.view()
	if len(v.Lanes) != 2 || v.Lanes[0].Node != "a0" || v.Lanes[1].Node != "a1" {
		t.Fatalf("lanes %+v", v.Lanes)
	}
	if got := v.Lanes[0].Seqs; !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("a0's slices %v, want 1 2 3 (each once)", got)
	}
	if got := v.Lanes[1].Rows; !slices.Equal(got, []int{1, 0, 1}) {
		t.Fatalf("a1's rows %v", got)
	}
	// a1 switched 1 ms after a0 every slice; its last switch is the end.
	if got := v.Lanes[1].T; got[2] != 0 || got[1] != -100_000 || v.Lanes[0].T[2] != -1000 {
		t.Fatalf("times a0 %v a1 %v (µs before the end)", v.Lanes[0].T, got)
	}
	if len(v.Skew) != 3 || v.Skew[2] != [2]int64{-1000, 0} {
		t.Fatalf("skew %v, want 3 slices of 1 ms", v.Skew)
	}
	tl.add(map[string][]telemetry.SliceRecord{"a0": {rec(4, 0), rec(5, 0)}})
	if got := tl.view().Lanes[0].Seqs; !slices.Equal(got, []uint64{2, 3, 4, 5}) {
		t.Fatalf("a0's slices after the bound %v, want the newest 4", got)
	}
	// A host with its own clock: its switch is placed at the strobe's
	// send time plus its own reception-to-switch delay.
	other := rec(6, 0)
	other.RecvMono, other.SwitchedMono = 5e12, 5e12+ms
	if got := switchedAt(other); got != other.SentMono+ms {
		t.Fatalf("switch of another clock at %d, want %d", got, other.SentMono+ms)
	}
}
