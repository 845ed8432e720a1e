package bench

import (
	"math"
	"testing"
	"time"
)

func TestIterations(t *testing.T) {
	tp, _ := ParseTemplate("50ms,25ms,news,NB")
	for _, procs := range []int{1, 4, 16} {
		est := IterationEstimate(tp, procs, DefaultNetwork())
		for _, d := range []time.Duration{time.Minute, 10 * time.Second, time.Millisecond} {
			want := max(1, int(math.Round(float64(d)/float64(est))))
			if got := Iterations(tp, procs, DefaultNetwork(), d); got != want {
				t.Errorf("%d procs, %v: %d iterations, want %d", procs, d, got, want)
			}
		}
	}
	// Larger messages make iterations longer, hence fewer of them.
	big := DefaultNetwork()
	big.MessageSize = 1 << 20
	if a, b := Iterations(tp, 16, DefaultNetwork(), time.Hour), Iterations(tp, 16, big, time.Hour); b >= a {
		t.Errorf("1 MiB messages: %d iterations, 4 KiB: %d", b, a)
	}
}
