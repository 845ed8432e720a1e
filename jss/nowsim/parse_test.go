package nowsim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Speeds read back as written; bad items are refused.
func TestParseSpeeds(t *testing.T) {
	got, err := ParseSpeeds("2x1, 1.5\n3x4")
	if want := []float64{1, 1, 1.5, 4, 4, 4}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("speeds %v, %v; want %v", got, err, want)
	}
	if s := SpeedSummary(got); s != "2x1,1x1.5,3x4" {
		t.Errorf("summary %q", s)
	}
	for _, bad := range []string{"", "0", "x2", "70000x1", "-1", "2xfast"} {
		if _, err := ParseSpeeds(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	r, err := ParseRange("10m-2h")
	if err != nil || r != (Range{10 * time.Minute, 2 * time.Hour}) {
		t.Errorf("range %v, %v", r, err)
	}
	if _, err := ParseRange("2h-10m"); err == nil {
		t.Error("HI < LO accepted")
	}
}

// A range that is one bad duration is said to be bad once, on one line
// (it is both bounds).
func TestParseRangeOneBadDuration(t *testing.T) {
	if _, err := ParseRange("x"); err == nil || strings.Count(err.Error(), "invalid duration") != 1 {
		t.Errorf("error %q", err)
	}
}
