package rank

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// Burning d uses at least d of the thread's CPU time.
func TestBurnCPU(t *testing.T) {
	runtime.LockOSThread() // burnCPU runs on this thread too
	defer runtime.UnlockOSThread()
	for _, d := range []time.Duration{0, time.Millisecond, 30 * time.Millisecond} {
		before, err := threadCPU()
		if err != nil {
			t.Fatal(err)
		}
		if err := burnCPU(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		after, err := threadCPU()
		if err != nil {
			t.Fatal(err)
		}
		if used := after - before; used < d {
			t.Errorf("burning %v used %v of CPU time", d, used)
		}
	}
}

func TestBurnCPUCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := burnCPU(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("burnCPU with a cancelled context: %v", err)
	}
}

// fakeClock is a virtual wall clock: sleeping advances it, by the time
// asked plus a wake-up latency, unless the process is stopped when the
// sleep's timer expires, in which case it wakes when it is continued.
type fakeClock struct {
	t       time.Duration
	latency time.Duration
	stops   []stop // sorted, disjoint
	sleeps  []time.Duration
}

type stop struct{ from, to time.Duration }

func (c *fakeClock) clock() wallClock {
	base := time.Unix(1e9, 0)
	return wallClock{
		now: func() time.Time { return base.Add(c.t) },
		sleep: func(d time.Duration) {
			c.sleeps = append(c.sleeps, d)
			wake := c.t + d
			for _, s := range c.stops {
				if s.from <= wake && wake < s.to {
					wake = s.to // stopped when the timer fired: runs again when continued
				}
			}
			c.t = wake + c.latency
		},
	}
}

// stopped is the part of [from, to) the process spent stopped.
func (c *fakeClock) stopped(from, to time.Duration) time.Duration {
	var sum time.Duration
	for _, s := range c.stops {
		sum += max(0, min(to, s.to)-max(from, s.from))
	}
	return sum
}

func TestWallWait(t *testing.T) {
	const step = wallStep + wallTolerance // the most one step is credited
	for _, c := range []struct {
		name    string
		d       time.Duration
		latency time.Duration
		stops   []stop
	}{
		{"no stop", 10 * time.Millisecond, 50 * time.Microsecond, nil},
		{"no stop, short", 300 * time.Microsecond, 50 * time.Microsecond, nil},
		{"late wake-ups are not credited beyond the tolerance", 5 * time.Millisecond, 700 * time.Microsecond, nil},
		// A 500 ms stop in the middle of the fourth step.
		{"stop mid-step", 10 * time.Millisecond, 50 * time.Microsecond, []stop{{3500 * time.Microsecond, 503500 * time.Microsecond}}},
		// Right at the start of a step: the step ran for nothing, the worst case.
		{"stop at a step's start", 10 * time.Millisecond, 0, []stop{{2 * time.Millisecond, 52 * time.Millisecond}}},
		{"two stops", 20 * time.Millisecond, 80 * time.Microsecond, []stop{{1300 * time.Microsecond, 51300 * time.Microsecond}, {60 * time.Millisecond, 110 * time.Millisecond}}},
		// A stop shorter than the rest of the step costs nothing.
		{"short stop within a sleep", 5 * time.Millisecond, 0, []stop{{2100 * time.Microsecond, 2200 * time.Microsecond}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := &fakeClock{latency: c.latency, stops: c.stops}
			credited, err := fc.clock().credit(context.Background(), c.d)
			if err != nil {
				t.Fatal(err)
			}
			elapsed := fc.t
			stopped := fc.stopped(0, elapsed)
			running := elapsed - stopped
			for _, s := range fc.sleeps {
				if s <= 0 || s > wallStep {
					t.Errorf("slept %v, want steps in (0, %v]", s, wallStep)
				}
			}
			if credited < c.d {
				t.Errorf("credited %v < %v", credited, c.d)
			}
			// The documented bound: running time ≥ d − stops × (step + tolerance).
			if lo := c.d - time.Duration(len(c.stops))*step; running < lo {
				t.Errorf("ran %v (elapsed %v, stopped %v), below the bound %v", running, elapsed, stopped, lo)
			}
			if len(c.stops) == 0 && running < c.d {
				t.Errorf("ran %v without stops, less than %v", running, c.d)
			}
		})
	}
}

// The worst case is reached: a stop from the very start of a step leaves
// the step credited with step + tolerance while the rank ran 0 in it.
func TestWallWaitWorstCase(t *testing.T) {
	fc := &fakeClock{stops: []stop{{0, time.Second}}}
	d := 3 * time.Millisecond
	if _, err := fc.clock().credit(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	running := fc.t - fc.stopped(0, fc.t)
	if want := d - wallStep - wallTolerance; running != want {
		t.Errorf("ran %v, want exactly %v (d − step − tolerance)", running, want)
	}
}

func TestWallWaitCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fc := &fakeClock{}
	c := fc.clock()
	sleep := c.sleep
	c.sleep = func(d time.Duration) {
		sleep(d)
		if fc.t >= 5*time.Millisecond {
			cancel()
		}
	}
	credited, err := c.credit(ctx, time.Hour)
	if !errors.Is(err, context.Canceled) || credited != 5*time.Millisecond {
		t.Errorf("credited %v, %v; want 5ms, context.Canceled", credited, err)
	}
}

// The real clock: without stops a wait lasts at least d (no upper bound).
func TestWallWaitReal(t *testing.T) {
	d := 5 * time.Millisecond
	start := time.Now()
	if err := realWallClock().wait(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < d {
		t.Errorf("waited %v, less than %v", el, d)
	}
}
