package bench

import (
	"math"
	"testing"
	"time"
)

// The draws are pinned bit for bit: the simulator's results, and the
// runtime's benchmark ranks, depend on them.
func TestDrawPinned(t *testing.T) {
	for _, c := range []struct {
		seed       uint64
		proc, iter int
		bits       uint64
	}{
		{0, 0, 0, 0x3fee2989be137734},
		{1, 2, 3, 0x3fc694035d10ff94},
		{42, 7, 1000, 0x3fc0f39888f34d88},
		{0xdeadbeefcafef00d, 31, 12345, 0x3fa7a44fc9efe2c0},
		{math.MaxUint64, 0, 1, 0x3fb2cede6584f7a0},
	} {
		if got := Draw(c.seed, c.proc, c.iter); math.Float64bits(got) != c.bits {
			t.Errorf("Draw(%#x, %d, %d) = %v (%#x), want %v (%#x)", c.seed, c.proc, c.iter, got, math.Float64bits(got), math.Float64frombits(c.bits), c.bits)
		}
	}
}

func TestComputePinned(t *testing.T) {
	tp := Template{Grain: 50 * time.Millisecond, Imbalance: 25 * time.Millisecond, Pattern: News, Sync: NonBlocking}
	for _, c := range []struct {
		proc, iter int
		want       time.Duration
	}{
		{0, 0, 61184124},
		{3, 2, 42128269},
		{1, 1, 44691614},
	} {
		if got := tp.Compute(42, c.proc, c.iter); got != c.want {
			t.Errorf("Compute(42, %d, %d) = %d, want %d", c.proc, c.iter, got, c.want)
		}
		if got := tp.ComputeTime(Draw(42, c.proc, c.iter)); got != tp.Compute(42, c.proc, c.iter) {
			t.Errorf("Compute(42, %d, %d) is not ComputeTime(Draw(…))", c.proc, c.iter)
		}
	}
}

// Draws are in [0, 1), spread out, and independent of the order asked.
func TestDrawRange(t *testing.T) {
	const n = 20000
	var sum float64
	seen := map[uint64]bool{}
	for i := range n {
		u := Draw(7, i%13, i/13)
		if !(u >= 0 && u < 1) {
			t.Fatalf("Draw(7, %d, %d) = %v, outside [0, 1)", i%13, i/13, u)
		}
		seen[math.Float64bits(u)] = true
		sum += u
	}
	if len(seen) != n {
		t.Errorf("%d distinct draws of %d", len(seen), n)
	}
	if mean := sum / n; math.Abs(mean-0.5) > 0.01 {
		t.Errorf("mean draw %v, want about 0.5", mean)
	}
	if Draw(7, 3, 5) != Draw(7, 3, 5) || Draw(7, 3, 5) == Draw(8, 3, 5) || Draw(7, 3, 5) == Draw(7, 5, 3) {
		t.Error("draws are not a function of (seed, proc, iter) alone")
	}
}
