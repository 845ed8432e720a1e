package strobe

import "testing"

func TestSkew(t *testing.T) {
	rec := func(epoch, seq uint64, sent, switched int64) SliceRecord {
		return SliceRecord{Epoch: epoch, Seq: seq, SentMono: sent, DueMono: sent - 10, SwitchedMono: switched}
	}
	sk := Skew(map[string][]SliceRecord{
		"a": {rec(1, 1, 0, 100), rec(1, 2, 1000, 1200), rec(1, 3, 2000, 2050), rec(2, 1, 5000, 5010)},
		"b": {rec(1, 1, 0, 130), rec(1, 3, 2000, 2050)},
		"c": {rec(1, 1, 0, 110), rec(2, 2, 6000, 6010)},
	})
	// Slice 1/1: 100..130 → 30; 1/3: 0. Slice 1/2, 2/1 and 2/2 have one agent each.
	if sk.Slices != 2 || sk.Skew.Max != 30 || sk.Skew.P50 != 0 || sk.Skew.P99 != 30 {
		t.Fatalf("skew %+v", sk)
	}
	// Latency over the five records of those slices: 100, 130, 110, 50, 50.
	if sk.Latency != (Dist{N: 5, Mean: 88, P50: 100, P99: 130, Max: 130}) {
		t.Fatalf("latency %+v", sk.Latency)
	}
	// Idle: boundary (sent − 10) to the first agent's switch: 1/1 → 110, 1/3 → 60.
	if sk.Idle != (Dist{N: 2, Mean: 85, P50: 60, P99: 110, Max: 110}) {
		t.Fatalf("idle %+v", sk.Idle)
	}
	// Overhead: boundary to the last agent's switch: 1/1 → 140, 1/3 → 60.
	if sk.Overhead != (Dist{N: 2, Mean: 100, P50: 60, P99: 140, Max: 140}) {
		t.Fatalf("overhead %+v", sk.Overhead)
	}
	if empty := Skew(nil); empty.Slices != 0 || empty.Skew.N != 0 {
		t.Fatalf("empty %+v", empty)
	}
}

func TestDistNearestRank(t *testing.T) {
	xs := make([]int64, 100)
	for i := range xs {
		xs[i] = int64(100 - i) // 100 … 1, unsorted
	}
	if d := distOf(xs); d != (Dist{N: 100, Mean: 50, P50: 50, P99: 99, Max: 100}) {
		t.Fatalf("%+v", d)
	}
	if d := distOf([]int64{7}); d != (Dist{N: 1, Mean: 7, P50: 7, P99: 7, Max: 7}) {
		t.Fatalf("%+v", d)
	}
	if d := distOf(nil); d != (Dist{}) {
		t.Fatalf("%+v", d)
	}
}

func TestRing(t *testing.T) {
	r := newRing[int](3)
	if got := r.snapshot(); len(got) != 0 {
		t.Fatal(got)
	}
	for i := 1; i <= 5; i++ {
		r.add(i)
	}
	if got := r.snapshot(); len(got) != 3 || got[0] != 3 || got[2] != 5 {
		t.Fatalf("%v", got)
	}
}
