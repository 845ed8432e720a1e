package main

import (
	"strings"
	"testing"
)

// Every bad flag of bench run is named at once, with exit status 2,
// before any cluster starts. (--modes, the former name of --mode, is still
// read, with a warning.)
func TestBenchRunBadFlags(t *testing.T) {
	code, _, stderr := cosched(t, "", "bench", "run", "--modes", "foo,local,gang,gang", "--jobs", "0", "--work", "gpu",
		"--policy", "x", "--workload", "w9", "--slice", "100us", "--load", "0", "--bandwidth", "fast", "--out", t.TempDir())
	if code != 2 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{`unknown workload "w9"`, "--jobs 0", `unknown mode "foo"`, "local is not a scheduling mode",
		"--mode: gang twice", "warning: --modes is the former name of --mode", `--work "gpu"`, `unknown policy "x"`, "--slice 100µs", "--load 0", `--bandwidth "fast"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
