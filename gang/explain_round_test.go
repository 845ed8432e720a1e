package gang

import (
	"testing"
	"time"
)

// Reasons print times as a person reads them: 40s, not 40.117481189s.
func TestExplanationRoundsTimes(t *testing.T) {
	for at, want := range map[time.Duration]string{
		40117481189 * time.Nanosecond:                         "reserved to start at 40s",
		2*time.Minute + 3400*time.Millisecond:                 "reserved to start at 2m3s",
		1500 * time.Microsecond:                               "reserved to start at 2ms",
		1234 * time.Nanosecond:                                "reserved to start at 1µs",
		3*time.Hour + 59*time.Minute + 59700*time.Millisecond: "reserved to start at 4h0m0s",
	} {
		if got := (Explanation{Rule: RuleReservedLater, At: at}).String(); got != want {
			t.Errorf("%v: %q, want %q", at, got, want)
		}
	}
}
