package member

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package if any goroutine of this package or of
// memberlist outlives the tests (goleak's VerifyTestMain, by hand).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := settle(10 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked after all tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// checkLeaks fails t if goroutines of this package (or memberlist) are
// still running a few seconds after the test and its cleanups finish.
// Register it first, so it runs after every other cleanup.
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if leaked := settle(10 * time.Second); leaked != "" {
			t.Errorf("goroutines leaked:\n%s", leaked)
		}
	})
}

// settle waits up to d for the interesting goroutines to exit and returns
// the stacks of those that did not.
func settle(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		leaked := interestingGoroutines()
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func interestingGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the calling goroutine
			continue
		}
		if strings.Contains(g, "cosched/cosched/member.") || strings.Contains(g, "hashicorp/memberlist.") {
			if strings.Contains(g, "member.Test") && !strings.Contains(g, "member.(*") {
				continue // a test function's own goroutine (another test's t.Run parent)
			}
			out = append(out, g)
		}
	}
	return out
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
