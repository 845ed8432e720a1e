package strobe

import "testing"

func TestSkewTracker(t *testing.T) {
	tr := NewSkewTracker(0)
	// Slice k: agents switch at 1000k, 1000k+10k, 1000k+20k → skew 20k ns
	// (well, 20·k): 20, 40, 60, ... Observed interleaved, as heartbeats arrive.
	for k := uint64(1); k <= 6; k++ {
		for i := int64(0); i < 3; i++ {
			tr.Observe(1, k, int64(k)*1000+i*10*int64(k))
		}
	}
	// Slices close two behind the newest: 1–4 are closed.
	st := tr.Stats()
	if st.Slices != 4 || st.Skew != (Dist{N: 4, Mean: 50, P50: 40, P99: 80, Max: 80}) {
		t.Fatalf("after 6 slices: %+v", st)
	}
	// A heartbeat of a closed slice changes nothing; one of an open slice
	// widens it; a lone switch gives no skew.
	tr.Observe(1, 2, 99999)
	tr.Observe(1, 5, 5000-500) // slice 5: 4500 … 5100 → 600
	tr.Observe(1, 8, 8000)     // closes 5 and 6; 8 is alone so far
	st = tr.Stats()
	if st.Slices != 6 || st.Skew.Max != 600 {
		t.Fatalf("after the late heartbeats: %+v", st)
	}
	// A new controller epoch closes the old one's open slices; the old
	// epoch's stragglers are ignored.
	tr.Observe(2, 1, 100)
	tr.Observe(2, 1, 130)
	tr.Observe(1, 8, 9000)
	tr.Observe(2, 3, 300) // closes 2/1
	st = tr.Stats()
	if st.Slices != 7 || st.Skew.N != 7 || st.Skew.P50 != 60 {
		t.Fatalf("after the new epoch: %+v", st)
	}
	// Garbage sequence numbers cannot grow the open set without bound.
	for k := uint64(1); k < 10000; k++ {
		tr.Observe(2, 1<<40-k, 1)
	}
	if n := len(tr.open); n > maxOpen {
		t.Fatalf("%d open slices", n)
	}
}
