package member

import (
	"github.com/cosched/cosched/internal/leakcheck"
	"testing"
	"time"
)

// leaks watches this package's goroutines and memberlist's.
func leaks() leakcheck.Checker {
	return leakcheck.New("member", "github.com/cosched/cosched/member", "github.com/hashicorp/memberlist")
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
