package now

import (
	"math"
	"time"
)

// Speed returns the effective speed of a job on nodes with the given
// speeds: their minimum for a rigid job, their mean for a load-balanced one.
// It returns 0 for no nodes.
func Speed(speeds []float64, balanced bool) float64 {
	if len(speeds) == 0 {
		return 0
	}
	if balanced {
		var sum float64
		for _, s := range speeds {
			sum += s
		}
		return sum / float64(len(speeds))
	}
	lo := speeds[0]
	for _, s := range speeds[1:] {
		lo = min(lo, s)
	}
	return lo
}

// Runtime returns how long a processing time t takes at effective speed v:
// t / v, rounded to the nanosecond.
func Runtime(t time.Duration, v float64) time.Duration {
	return time.Duration(math.Round(float64(t) / v))
}

// Normalized returns the processing time a run of the given length at
// effective speed v represents: elapsed × v, rounded to the nanosecond. It
// is the inverse of Runtime.
func Normalized(elapsed time.Duration, v float64) time.Duration {
	return time.Duration(math.Round(float64(elapsed) * v))
}
