package rank

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A shim killed for not stopping in time is explained in its error: how
// long it ran and how long it waited for a processor, so that a starved
// shim on an overloaded node is told from one that is stuck.
func TestShimTimeoutSaysWhereTheTimeWent(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no /proc/PID/schedstat on this kernel (CONFIG_SCHED_INFO): the error has no explanation")
	}
	m, dir := newManager(t, func(c *Config) {
		c.Shim = []string{"sh", "-c", "sleep 1000", "sh"}
		c.StartTimeout = 300 * time.Millisecond
	})
	_, err := m.Start(spec(dir, 1, 0, true, "true"))
	if err == nil {
		t.Fatal("Start of a shim that never stops succeeded")
	}
	// Which of blocked and starved depends on the host's load: only the
	// figures' presence is certain here (the verdicts: TestSchedTimesWhy).
	if msg := err.Error(); !strings.Contains(msg, "shim did not stop itself within 300ms (it ran ") || !strings.Contains(msg, " for a processor: ") {
		t.Fatalf("Start: %v; want the time the shim ran and waited", err)
	}
	if e := nextExit(t, m); e.Err == nil || e.Signal != "killed" {
		t.Fatalf("Exit %+v, want the killed shim", e)
	}
}

// The verdict on a shim that did not stop in time, from its figures.
func TestSchedTimesWhy(t *testing.T) {
	for _, tc := range []struct {
		ran, waited time.Duration
		want        string
	}{
		{40 * time.Millisecond, 29900 * time.Millisecond, "it ran 40ms and waited 29.9s for a processor: starved of CPU"},
		{29 * time.Second, 900 * time.Millisecond, "it ran 29s and waited 900ms for a processor: running, not stopping"},
		{2 * time.Millisecond, time.Millisecond, "it ran 2ms and waited 1ms for a processor: blocked"},
		{5 * time.Second, 5 * time.Second, "it ran 5s and waited 5s for a processor: blocked"},
	} {
		if got := (schedTimes{ran: tc.ran, waited: tc.waited}).why(30 * time.Second); got != tc.want {
			t.Errorf("ran %v waited %v: %q, want %q", tc.ran, tc.waited, got, tc.want)
		}
	}
}
