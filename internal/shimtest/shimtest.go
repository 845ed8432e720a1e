// Package shimtest gives the tests that run agents the rank shim an
// installed agent starts every rank through (cmd/cosched-rank, built once
// per test binary run), rather than the test binary itself.
//
// Why not the test binary: a race-built test binary initialises every
// package the tests link (about 110 ms of CPU before the shim stops
// itself, against about 10 ms for cosched-rank), and the shim runs in its
// job's cgroup, whose parent weighs a tenth of the agents'
// (jobcg.DefaultCPUWeight). Beside busy processes and other clusters'
// jobs that start took seconds and, now and then, past the rank
// manager's 30 s start timeout, failing the job.
package shimtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cosched/cosched/node/rank/shim"
)

// Env names the variable that carries the built shim's path to the test
// binary's tests and to the processes they start from it (agents run as
// processes), which inherit it.
const Env = "COSCHED_TEST_RANK_SHIM"

// Run builds cmd/cosched-rank into a new directory every user may enter
// (ranks run as their submitters start through it), sets Env to it, runs
// the tests and removes the directory: a TestMain's m.Run. A failed build
// fails the package with the build's output, before any test runs.
func Run(m *testing.M) int {
	bin, remove, err := Build(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	if err := os.Setenv(Env, bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Build builds cmd/cosched-rank into a new temporary directory that every
// user may enter and returns the binary's path and a function that
// removes the directory. It runs the go command, whose build cache makes
// every build after the first a link at most.
func Build(ctx context.Context) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "cosched-rank-test-")
	if err != nil {
		return "", nil, fmt.Errorf("shimtest: %w", err)
	}
	remove = func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		remove()
		return "", nil, fmt.Errorf("shimtest: %w", err)
	}
	bin = filepath.Join(dir, shim.Name)
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/cosched/cosched/cmd/cosched-rank").CombinedOutput()
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("shimtest: building cmd/cosched-rank: %w\n%s", err, out)
	}
	return bin, remove, nil
}

// Command is the shim command for a rank manager or an agent
// (node.Config.Shim): the binary Run built.
func Command(tb testing.TB) []string {
	tb.Helper()
	bin := os.Getenv(Env)
	if bin == "" {
		tb.Fatalf("shimtest: %s is not set: the package's TestMain must call shimtest.Run", Env)
	}
	return []string{bin}
}
