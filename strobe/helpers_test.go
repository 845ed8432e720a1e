package strobe

import (
	"context"
	"github.com/cosched/cosched/internal/leakcheck"
	"sync"
	"testing"
	"time"
)

// leaks watches this package's goroutines and memberlist's.
func leaks() leakcheck.Checker {
	return leakcheck.New("strobe", "github.com/cosched/cosched/strobe", "github.com/hashicorp/memberlist")
}

// TestMain fails the package if any goroutine of this package or of
// memberlist outlives the tests.
func TestMain(m *testing.M) { leaks().Main(m) }

// checkLeaks fails t if goroutines of this package (or memberlist) are
// still running a few seconds after the test and its cleanups finish.
// Register it first, so it runs after every other cleanup.
func checkLeaks(t *testing.T) {
	t.Helper()
	leaks().Check(t)
}

// eventually polls cond until it holds or a generous timeout passes. The
// timeout is a hang detector, not a speed assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// switchLog is a SwitchFunc that records the rows it was asked for.
type switchLog struct {
	mu   sync.Mutex
	rows []int
	cost time.Duration
}

func (s *switchLog) Switch(row int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, row)
	return s.cost
}

func (s *switchLog) Rows() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.rows...)
}

// runFollower runs f until the test ends, then cancels it and waits.
func runFollower(t *testing.T, f *Follower) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			t.Errorf("Run: %v", err)
		}
	})
}
