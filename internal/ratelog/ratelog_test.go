package ratelog

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := New(time.Second)
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{900 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 1},
		{6 * time.Second, true, 0},
	}
	for _, s := range steps {
		ok, n := l.Allow(t0.Add(s.at))
		if ok != s.ok || n != s.suppressed {
			t.Errorf("at %v: Allow = %v, %d; want %v, %d", s.at, ok, n, s.ok, s.suppressed)
		}
	}
}
