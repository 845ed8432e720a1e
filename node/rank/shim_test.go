package rank

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shimCmd runs this test binary as the shim.
func shimCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), shimEnv+"=1")
	return cmd
}

// ShimMain rejects bad arguments and missing programs with status 127 and a
// message, without stopping.
func TestShimMainFailures(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"sh"},
		{"--"},
		{"--", ""},
		{"--", "/no/such/program"},
		{"--", "no-such-program-xyz"},
	} {
		var stderr bytes.Buffer
		cmd := shimCmd(args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ShimExitCode {
			t.Errorf("shim %q: %v, want exit status %d", args, err, ShimExitCode)
		}
		if !strings.HasPrefix(stderr.String(), "cosched rank shim: ") {
			t.Errorf("shim %q: stderr %q", args, stderr.String())
		}
	}
}

// ShimMain stops itself before running the program, then execs it with the
// inherited environment once continued, whichever thread it runs on ("thread"
// mode: not the thread the process started with; a stop sent with kill(2)
// instead of tgkill(2) was lost there about one time in three).
func TestShimMainStopsThenExecs(t *testing.T) {
	for _, mode := range []string{"1", "thread"} {
		t.Run("mode="+mode, func(t *testing.T) {
			for i := range 20 {
				shimStopsThenExecs(t, mode, i == 0)
			}
		})
	}
}

func shimStopsThenExecs(t *testing.T, mode string, logTiming bool) {
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := shimCmd("--", "sh", "-c", `echo "$0 $SHIM_TEST_VAR"`, "prog")
	cmd.Env = append(cmd.Env, shimEnv+"="+mode, "SHIM_TEST_VAR=hello")
	cmd.Stdout = f
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	waitState(t, pid, "TZ") // T stays T (nobody continues it), Z stays Z
	if s := state(pid); s != 'T' {
		t.Fatalf("the shim ended without stopping itself (state %q)", s)
	}
	if logTiming {
		t.Logf("shim stopped %v after Start (polling /proc)", time.Since(begin))
	}
	if b, _ := os.ReadFile(out); len(b) != 0 {
		t.Fatalf("output before SIGCONT: %q", b)
	}
	if err := unix.Kill(pid, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "prog hello\n" {
		t.Fatalf("output %q, want %q", b, "prog hello\n")
	}
}
