package rank

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Work is what a compute phase does (see the package comment).
type Work int

// The kinds of compute work.
const (
	// CPU burns the phase's time as CPU time of the calling thread.
	CPU Work = iota
	// Wall waits the phase's time in wall-clock time, excluding time the
	// rank spends stopped, without using a core.
	Wall
)

// String returns "cpu" or "wall", which ParseWork reads back.
func (w Work) String() string {
	switch w {
	case CPU:
		return "cpu"
	case Wall:
		return "wall"
	}
	return fmt.Sprintf("Work(%d)", int(w))
}

// ParseWork reads "cpu" or "wall" (case-insensitive).
func ParseWork(s string) (Work, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "cpu":
		return CPU, nil
	case "wall":
		return Wall, nil
	}
	return 0, fmt.Errorf("work %q: want cpu or wall", s)
}

// phase returns the compute function of w.
func (w Work) phase() computeFunc {
	if w == Wall {
		return realWallClock().wait
	}
	return burnCPU
}

// burnBurst is the number of arithmetic rounds between two reads of the
// thread's CPU clock: a few µs, small against the clock read's cost being
// noticeable and against the overshoot mattering.
const burnBurst = 4096

// burnCPU spins until the calling thread has used d more CPU time, or ctx
// is done. The goroutine stays on its OS thread meanwhile, so the thread's
// CPU clock measures exactly this work; time the thread is stopped or
// waiting for a core does not advance it.
func burnCPU(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := threadCPU()
	if err != nil {
		return err
	}
	x := uint64(d) | 1
	for {
		for range burnBurst {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		now, err := threadCPU()
		if err != nil {
			return err
		}
		if now-start >= d {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	runtime.KeepAlive(x)
	return nil
}

// threadCPU reads the calling thread's CPU clock.
func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("reading the thread's CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// Wall work: sleep steps of at most wallStep, each credited with the wall
// time it took but at most wallStep + wallTolerance (see the package
// comment for the error bound this gives).
const (
	wallStep      = time.Millisecond
	wallTolerance = 200 * time.Microsecond
)

// wallClock is the clock and sleeper of Wall work; tests inject fakes.
type wallClock struct {
	now   func() time.Time
	sleep func(time.Duration)
}

func realWallClock() wallClock { return wallClock{now: time.Now, sleep: time.Sleep} }

// wait sleeps until d of wall-clock time has been credited, or ctx is done.
func (w wallClock) wait(ctx context.Context, d time.Duration) error {
	_, err := w.credit(ctx, d)
	return err
}

// credit is wait that also returns the time credited: at least d when it
// returns no error. Each step is timed from the end of the previous one, so
// the loop's own time counts too, and a stop between two sleeps falls in
// (and is capped with) the next step.
func (w wallClock) credit(ctx context.Context, d time.Duration) (time.Duration, error) {
	var credited time.Duration
	prev := w.now()
	for credited < d {
		if err := ctx.Err(); err != nil {
			return credited, err
		}
		step := min(d-credited, wallStep)
		w.sleep(step)
		t := w.now()
		took := max(t.Sub(prev), 0)
		prev = t
		credited += min(took, step+wallTolerance)
	}
	return credited, nil
}
