package measure

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
)

func fields(err error) string {
	var out []string
	for _, e := range fielderr.All(err) {
		out = append(out, e.Field)
	}
	return strings.Join(out, ",")
}

// Each options type names every bad field, and accepts its defaults.
func TestValidateNamesFields(t *testing.T) {
	c := DefaultCalibrateOptions()
	c.StateDir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("calibrate defaults: %v", err)
	}
	c.Nodes, c.Slice, c.Pings, c.Work, c.Bandwidth = 1, 100*time.Microsecond, 9, "gpu", -1
	if got := fields(c.Validate()); got != "Nodes,Slice,Pings,Bandwidth,Work" {
		t.Fatalf("calibrate: %s", got)
	}
	s := StrobeOptions{Agents: 1, Slice: time.Millisecond, MPL: 0, Duration: 0, RealtimePriority: 100}
	if got := fields(s.Validate()); got != "Agents,Duration,MPL,RealtimePriority" {
		t.Fatalf("strobe: %s", got)
	}
	p := ProbeOptions{Test: "x", Count: 0, Size: 0}
	if got := fields(p.Validate()); got != "Size,Count,Test" {
		t.Fatalf("probe: %s", got)
	}
}

func TestDurationDistAndFormat(t *testing.T) {
	d := durationDist([]time.Duration{3, 1, 2, 4})
	if d.N != 4 || d.Mean != 2 || d.P50 != 2 || d.P99 != 4 || d.Max != 4 {
		t.Fatalf("%+v", d)
	}
	for in, want := range map[time.Duration]string{0: "0", 118 * time.Microsecond: "118µs", 1260 * time.Microsecond: "1.26ms", 2 * time.Second: "2s"} {
		if got := fmtDur(in); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", in, got, want)
		}
	}
}

// StrobeMethods checks every method's options before it starts anything:
// a bad method and bad options are errors keyed by field, and no cluster
// (no state directory) is made.
func TestStrobeMethodsChecksFirst(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	o := StrobeOptions{Agents: 2, Slice: 10 * time.Millisecond, Duration: time.Second, MPL: 0}
	reps, err := StrobeMethods(context.Background(), StrobeRuns{StrobeOptions: o, Methods: []string{"signal", "sigstop"}})
	if reps != nil || fields(err) != "MPL,Suspend" {
		t.Fatalf("reports %v, error fields %q (%v)", reps, fields(err), err)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Fatalf("a cluster was started: %v", left)
	}
}
