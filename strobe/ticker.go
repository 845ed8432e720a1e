package strobe

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/internal/mono"
)

// Tick is one slice boundary of a Ticker.
type Tick struct {
	N        uint64 // ticks delivered so far, from 1 (use it as the slice number)
	Deadline int64  // mono time the tick was due: Start + k·Period for some k ≥ N
	Woke     int64  // mono time the ticker returned it
	Skipped  uint64 // deadlines passed over since the previous tick (the loop overran)
}

// TickerConfig configures a Ticker.
type TickerConfig struct {
	Period       time.Duration // the slice δ; at least 100µs
	OverrunAfter time.Duration // a tick counts as an overrun when its strobe went out this late; 0 = Period/10
	History      int           // ticks kept for the lateness distributions; 0 = 4096
	// Priority, when 1–99, runs Run's thread at SCHED_FIFO: a deadline
	// then preempts busy ranks instead of waiting for a CPU. Needs root or
	// CAP_SYS_NICE; without, Run carries on at normal priority and Stats
	// says why (RealtimeError).
	Priority int
	// SpinAhead, when positive, makes Next sleep until this long before
	// each deadline and busy-wait the rest: a sleeping thread wakes tens
	// of µs late (timer interrupt, then a context switch), a spinning one
	// within a clock read. It costs about SpinAhead minus the wake-up
	// lateness of CPU per tick. At most Period/2.
	SpinAhead time.Duration
	// KeepProcessor makes Run sleep by raw system calls that keep its
	// goroutine's Go processor (P), as RealtimeUDP.KeepProcessor does:
	// for a process that has a P to spare for it (cosched agent adds
	// one); in a process short of Ps the rest of it would wait.
	KeepProcessor bool
}

// Ticker is a deadline-based slice clock on CLOCK_MONOTONIC (the clock of
// mono.Now and of strobe timestamps). Deadlines are Start + k·Period, so
// lateness never accumulates into drift; when the loop overruns a whole
// period the missed deadlines are skipped (counted, never fired back to
// back: a slice of zero length helps nobody).
//
// It sleeps with clock_nanosleep(TIMER_ABSTIME) rather than a Go timer:
// the runtime's timers wake up to ~1 ms late (epoll's millisecond
// timeouts: measured ~540 µs p50 late at 1 ms on the 2-core development
// machine), which is half a slice at δ = 1 ms. Run additionally locks the
// loop to its OS thread and sets the thread's timer slack to 1 ns: on the
// same machine wake-ups are then ~35 µs p50 / ~50 µs p99 late, against
// ~90 µs p50 / 1.5 ms max with the default 50 µs slack and worse (776 µs
// p99) from an unlocked goroutine. time.Ticker's intervals jitter by
// ~90 µs p50 / 270 µs p99 and it cannot report missed deadlines.
//
// Next and Run are for one goroutine; Sent is for the same goroutine;
// Stats is safe from any goroutine.
type Ticker struct {
	period       int64
	overrunAfter int64
	start        int64
	priority     int
	spin         int64
	k            uint64 // index of the last deadline handed out
	// rawSleep: Next sleeps by a raw system call, keeping its P (Run's
	// locked thread, with KeepProcessor; see RealtimeUDP.loop for why).
	rawSleep      bool
	keepProcessor bool

	mu       sync.Mutex
	n        uint64 // ticks delivered
	skipped  uint64
	overruns uint64
	wake     ring[int64]
	send     ring[int64]
	rtErr    string
}

// sleepChunk bounds one uninterruptible sleep, so a cancelled context is
// noticed within it even at long periods.
const sleepChunk = 20 * time.Millisecond

// NewTicker starts a ticker whose first deadline is one period from now.
func NewTicker(cfg TickerConfig) (*Ticker, error) {
	var errs []error
	if cfg.Period < 100*time.Microsecond {
		errs = append(errs, fmt.Errorf("period %v below 100µs", cfg.Period))
	}
	if cfg.OverrunAfter < 0 {
		errs = append(errs, fmt.Errorf("negative OverrunAfter %v", cfg.OverrunAfter))
	}
	if cfg.History < 0 {
		errs = append(errs, fmt.Errorf("negative History %d", cfg.History))
	}
	if cfg.SpinAhead < 0 || cfg.SpinAhead > cfg.Period/2 {
		errs = append(errs, fmt.Errorf("SpinAhead %v outside [0, Period/2]", cfg.SpinAhead))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("strobe: ticker: %w", errors.Join(errs...))
	}
	if cfg.OverrunAfter == 0 {
		cfg.OverrunAfter = cfg.Period / 10
	}
	if cfg.History == 0 {
		cfg.History = 4096
	}
	return &Ticker{
		priority:      cfg.Priority,
		keepProcessor: cfg.KeepProcessor,
		spin:          int64(cfg.SpinAhead),
		period:        int64(cfg.Period),
		overrunAfter:  int64(cfg.OverrunAfter),
		start:         mono.Now(),
		wake:          newRing[int64](cfg.History),
		send:          newRing[int64](cfg.History),
	}, nil
}

// Next waits for the next deadline and returns its tick. It returns the
// context's error, within sleepChunk, once ctx is done.
func (t *Ticker) Next(ctx context.Context) (Tick, error) {
	if err := ctx.Err(); err != nil {
		return Tick{}, err
	}
	k := t.k + 1
	var skipped uint64
	if now := mono.Now(); now > t.deadline(k) {
		// Late already: the latest deadline that has passed is this tick;
		// the ones before it are skipped.
		latest := uint64((now - t.start) / t.period)
		skipped = latest - k
		k = latest
	}
	dl := t.deadline(k)
	for {
		now := mono.Now()
		if now >= dl-t.spin {
			break
		}
		wake := min(dl-t.spin, now+int64(sleepChunk))
		ts := unix.NsecToTimespec(wake)
		if err := t.sleepUntil(&ts); err != nil && err != unix.EINTR {
			return Tick{}, fmt.Errorf("strobe: ticker: clock_nanosleep: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return Tick{}, err
		}
	}
	woke := mono.Now()
	for woke < dl { // SpinAhead: the last stretch without a wake-up's lateness
		woke = mono.Now()
	}
	t.k = k
	t.mu.Lock()
	t.n++
	n := t.n
	t.skipped += skipped
	t.wake.add(woke - dl)
	t.mu.Unlock()
	return Tick{N: n, Deadline: dl, Woke: woke, Skipped: skipped}, nil
}

func (t *Ticker) deadline(k uint64) int64 { return t.start + int64(k)*t.period }

// Run calls fn at every tick until ctx is done (returning its error). The
// loop holds its OS thread for its whole life, with a 1 ns timer slack,
// restored on return. fn runs on the ticker's thread: the slice's work
// (row decision, Sender.Strobe) happens without a goroutine hand-off.
func (t *Ticker) Run(ctx context.Context, fn func(Tick)) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if t.priority > 0 {
		restore, err := setThreadFIFO(t.priority)
		defer restore()
		if err != nil {
			t.mu.Lock()
			t.rtErr = err.Error()
			t.mu.Unlock()
		}
	}
	if old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err == nil {
			defer func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0) }()
		}
	}
	t.rawSleep = t.keepProcessor
	defer func() { t.rawSleep = false }()
	lastYield := mono.Now()
	for {
		tk, err := t.Next(ctx)
		if err != nil {
			return err
		}
		fn(tk)
		if now := mono.Now(); t.keepProcessor && now-lastYield >= int64(yieldEvery) {
			// Through the scheduler now, a slice before the next
			// deadline, rather than preempted at any moment (yieldEvery).
			runtime.Gosched()
			lastYield = mono.Now()
		}
	}
}

// sleepUntil sleeps until the absolute CLOCK_MONOTONIC time ts (EINTR if a
// signal, such as the runtime's preemption, ends it sooner).
func (t *Ticker) sleepUntil(ts *unix.Timespec) error {
	if !t.rawSleep {
		return unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, ts, nil)
	}
	_, _, errno := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, uintptr(unix.CLOCK_MONOTONIC), uintptr(unix.TIMER_ABSTIME),
		uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Sent records when the strobe of tk went out (Sender.Strobe's result):
// its lateness feeds SendLate, and beyond OverrunAfter it counts as an
// overrun.
func (t *Ticker) Sent(tk Tick, sentMono int64) {
	late := sentMono - tk.Deadline
	t.mu.Lock()
	t.send.add(late)
	if late > t.overrunAfter {
		t.overruns++
	}
	t.mu.Unlock()
}

// Stats returns the ticker's counters and lateness distributions.
func (t *Ticker) Stats() TickerStats {
	t.mu.Lock()
	st := TickerStats{Ticks: t.n, Skipped: t.skipped, Overruns: t.overruns, RealtimeError: t.rtErr}
	wake, send := t.wake.snapshot(), t.send.snapshot()
	t.mu.Unlock()
	st.WakeLate, st.SendLate = distOf(wake), distOf(send)
	return st
}
