// Package leakcheck fails tests whose goroutines outlive them: goleak's
// VerifyTestMain and VerifyNone, by hand, narrowed to the goroutines of
// the packages named (the package under test and, e.g., memberlist), so
// the runtime's and the test framework's own goroutines never count.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// settleFor is how long goroutines get to exit after a test: a hang
// detector, not a speed assertion.
const settleFor = 10 * time.Second

// Checker watches the goroutines of the packages it names.
type Checker struct {
	pkg    string   // the package under test, by its name ("strobe")
	frames []string // stack substrings that make a goroutine interesting
}

// New returns a checker for the package named pkg at import path path,
// and for any other import paths given (their goroutines count too).
func New(pkg, path string, others ...string) Checker {
	frames := []string{path + "."}
	for _, o := range others {
		frames = append(frames, o+".")
	}
	return Checker{pkg: pkg, frames: frames}
}

// Main runs the tests and fails the package if a watched goroutine
// outlives them all.
func (c Checker) Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := c.settle(settleFor); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked after all tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// Check fails t if watched goroutines are still running a few seconds
// after the test and its cleanups finish. Register it first, so it runs
// after every other cleanup.
func (c Checker) Check(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if leaked := c.settle(settleFor); leaked != "" {
			t.Errorf("goroutines leaked:\n%s", leaked)
		}
	})
}

// settle waits up to d for the watched goroutines to exit and returns the
// stacks of those that did not.
func (c Checker) settle(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		leaked := c.running()
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running lists the stacks of the watched goroutines, but the caller's
// and the test functions' own (another test's t.Run parent).
func (c Checker) running() []string {
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
		if !c.watched(g) {
			continue
		}
		if strings.Contains(g, c.pkg+".Test") && !strings.Contains(g, c.pkg+".(*") {
			continue
		}
		out = append(out, g)
	}
	return out
}

func (c Checker) watched(stack string) bool {
	for _, f := range c.frames {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}
