// Package sharedtest locates the workplace's shared data (real SWF traces
// and scheduling oracles in ../shared, beside the module root) for tests,
// and skips a test with a clear message when a fresh clone lacks it.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Path returns the path of elem under the shared directory, skipping the
// test when it does not exist.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Skipf("shared data not found (%v); these tests need ../shared beside the module", err)
	}
	p := filepath.Join(append([]string{root, "..", "shared"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data %s is absent (a fresh clone has no ../shared): skipping", p)
	}
	return p
}

// moduleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
