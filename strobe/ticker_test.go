package strobe

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestTickerDeadlines(t *testing.T) {
	t.Run("sleep", func(t *testing.T) { testTickerDeadlines(t, 0) })
	// Spinning the last stretch must never hand out a tick early.
	t.Run("spin-ahead", func(t *testing.T) { testTickerDeadlines(t, 300*time.Microsecond) })
}

func testTickerDeadlines(t *testing.T, spin time.Duration) {
	const period = time.Millisecond
	tk, err := NewTicker(TickerConfig{Period: period, History: 16, SpinAhead: spin})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ticks []Tick
	err = tk.Run(ctx, func(x Tick) {
		ticks = append(ticks, x)
		if len(ticks) == 10 {
			// Overrun by more than three periods: at least deadlines
			// 11, 12 and 13 pass; the next tick is the latest passed.
			time.Sleep(3*period + period/2)
		}
		if len(ticks) == 40 {
			cancel()
		}
	})
	if err != context.Canceled {
		t.Fatalf("Run = %v", err)
	}
	var skipped uint64
	for i, x := range ticks {
		if x.N != uint64(i+1) || x.Woke < x.Deadline {
			t.Fatalf("tick %d: %+v", i, x)
		}
		if i == 0 {
			continue
		}
		step := x.Deadline - ticks[i-1].Deadline
		// Deadlines sit on the grid: no drift, ever.
		if step <= 0 || step%int64(period) != 0 || uint64(step/int64(period))-1 != x.Skipped {
			t.Fatalf("tick %d: deadline step %d ns with %d skipped", i, step, x.Skipped)
		}
		skipped += x.Skipped
	}
	if ticks[10].Skipped < 2 {
		t.Fatalf("the overrun skipped %d deadlines, want ≥ 2", ticks[10].Skipped)
	}
	st := tk.Stats()
	if st.Ticks != 40 || st.Skipped != skipped || st.WakeLate.N != 16 {
		t.Fatalf("stats %+v (skipped %d)", st, skipped)
	}
	t.Logf("wake lateness p50 %v p99 %v max %v", st.WakeLate.P50, st.WakeLate.P99, st.WakeLate.Max)
}

func TestTickerSentCountsOverruns(t *testing.T) {
	tk, err := NewTicker(TickerConfig{Period: 10 * time.Millisecond, OverrunAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	x := Tick{N: 1, Deadline: 1_000_000}
	tk.Sent(x, x.Deadline+500_000)   // 0.5 ms late: fine
	tk.Sent(x, x.Deadline+2_000_000) // 2 ms late: overrun
	st := tk.Stats()
	if st.Overruns != 1 || st.SendLate.N != 2 || st.SendLate.Max != 2*time.Millisecond {
		t.Fatalf("stats %+v", st)
	}
}

func TestTickerNextHonoursContext(t *testing.T) {
	tk, err := NewTicker(TickerConfig{Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := tk.Next(ctx); err != context.Canceled {
		t.Fatalf("Next = %v", err)
	}
}

func TestTickerConfig(t *testing.T) {
	_, err := NewTicker(TickerConfig{Period: time.Microsecond, OverrunAfter: -1, History: -1, SpinAhead: time.Millisecond})
	for _, want := range []string{"strobe: ticker", "period", "OverrunAfter", "History", "SpinAhead"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not mention %q", err, want)
		}
	}
}
