package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Seconds must give d.Seconds()'s bits, whole seconds or not.
func TestSecondsSameBits(t *testing.T) {
	ds := []time.Duration{0, 1, -1, time.Second, -time.Second, 86400 * time.Second,
		time.Second + 1, 1500 * time.Millisecond, math.MaxInt64, math.MinInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ds = append(ds, time.Duration(r.Int64()), time.Duration(r.Int64N(1<<40))*time.Second,
			-time.Duration(r.Int64N(1<<30))*time.Second, time.Duration(r.Int64N(1<<40)))
	}
	for _, d := range ds {
		if got, want := Seconds(d), d.Seconds(); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Seconds(%d) = %v, d.Seconds() = %v", int64(d), got, want)
		}
	}
}
