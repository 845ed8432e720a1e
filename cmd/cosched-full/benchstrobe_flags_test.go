package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// `bench strobe` refuses a bad --auth before starting anything, with the
// other bad flags in the same message, and exit status 2.
func TestBenchStrobeAuthFlag(t *testing.T) {
	out, err := coschedCmd("bench", "strobe", "--auth", "maybe", "-N", "1").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	for _, want := range []string{"--auth maybe: want on, off or both", "-N 1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
