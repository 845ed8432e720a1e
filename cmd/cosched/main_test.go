package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/cli"
)

// asLight makes this test binary run as the light cosched (main) instead
// of the tests: the tests copy it to where the light binary is installed.
const asLight = "COSCHED_TEST_AS_LIGHT"

func TestMain(m *testing.M) {
	if os.Getenv(asLight) == "1" {
		main()
		os.Exit(0) // as the process would when main returns
	}
	os.Exit(m.Run())
}

// install puts this test binary, as the light cosched, at dir/rel and
// returns its path.
func install(t *testing.T, dir, rel string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(self, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// light is the light binary at exe as a process.
func light(exe string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), asLight+"=1")
	return cmd
}

// result runs cmd and returns its exit status, stdout and stderr.
func result(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// The light binary runs the full binary's commands by executing it in its
// own place, found beside it or in lib/cosched/: the same process (pid,
// signals, exit status), arguments and standard streams; the full
// binary's flag errors and help are the user's answer, and `cosched
// --help` lists every command. Without a full binary, the error names
// both places it looked.
func TestLightExecutesFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cosched-full")
	}
	dir := t.TempDir()
	full := filepath.Join(dir, cli.FullName)
	if out, err := exec.Command("go", "build", "-o", full, "../cosched-full").CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", cli.FullName, err, out)
	}
	cosched := install(t, dir, "cosched")

	t.Run("flag error", func(t *testing.T) {
		code, out, errOut := result(t, light(cosched, "agent", "--bogus"))
		if want := "cosched: unknown flag: --bogus\nRun 'cosched agent --help' for usage.\n"; code != 2 || out != "" || errOut != want {
			t.Errorf("agent --bogus: exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, want)
		}
	})
	t.Run("help", func(t *testing.T) {
		for _, args := range [][]string{{"agent", "--help"}, {"help", "agent"}} {
			code, out, errOut := result(t, light(cosched, args...))
			if code != 0 || !strings.Contains(out, "Usage:\n  cosched agent [flags]") || !strings.Contains(out, "--controller") {
				t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
			}
		}
		code, out, _ := result(t, light(cosched, "sim", "plot", "--help"))
		if code != 0 || !strings.Contains(out, "cosched sim plot [flags]") || !strings.Contains(out, "--in") {
			t.Errorf("sim plot --help: exit %d\n%s", code, out)
		}
		// Every command, listed by the light binary itself (its stubs
		// match the full commands: cmd/cosched-full's TestStubsMatchFull).
		_, lightHelp, _ := result(t, light(cosched, "--help"))
		_, fullHelp, _ := result(t, exec.Command(full, "--help"))
		if lightHelp != fullHelp || !strings.Contains(lightHelp, "\n  agent ") || !strings.Contains(lightHelp, "\n  submit ") {
			t.Errorf("cosched --help:\n%s\ncosched-full --help:\n%s", lightHelp, fullHelp)
		}
	})
	t.Run("same process", func(t *testing.T) {
		// ui --results serves until SIGINT or SIGTERM, then ends normally.
		results := t.TempDir()
		if err := os.WriteFile(filepath.Join(results, "results.csv"), []byte("mode,load,mean_response\nspace,0.5,1.5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := light(cosched, "ui", "--results", results)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		url, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("ui --results printed no address: %v\n%s", err, errb.String())
		}
		// The process that answers is the one started, now the full binary.
		exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
		if err != nil || exe != full {
			t.Errorf("process %d runs %q (%v), want %s", cmd.Process.Pid, exe, err, full)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(strings.TrimSpace(url))
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("ui --results after SIGTERM: %v (a daemon stops cleanly)\n%s", err, errb.String())
		}
	})
	t.Run("lib/cosched", func(t *testing.T) {
		prefix := t.TempDir()
		if err := os.MkdirAll(filepath.Join(prefix, "lib", "cosched"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(full, filepath.Join(prefix, "lib", "cosched", cli.FullName)); err != nil {
			if err := copyFile(full, filepath.Join(prefix, "lib", "cosched", cli.FullName)); err != nil {
				t.Fatal(err)
			}
		}
		code, _, errOut := result(t, light(install(t, prefix, "bin/cosched"), "agent", "--bogus"))
		if code != 2 || !strings.Contains(errOut, "unknown flag: --bogus") {
			t.Errorf("agent --bogus with lib/cosched/%s: exit %d, %q", cli.FullName, code, errOut)
		}
	})
	t.Run("absent", func(t *testing.T) {
		alone := t.TempDir()
		code, out, errOut := result(t, light(install(t, alone, "cosched"), "cluster", "up"))
		beside, lib := filepath.Join(alone, cli.FullName), filepath.Join(filepath.Dir(alone), "lib", "cosched", cli.FullName)
		if code != 1 || out != "" || !strings.Contains(errOut, beside) || !strings.Contains(errOut, lib) {
			t.Errorf("cluster up without %s: exit %d, stdout %q, stderr %q; want 1 naming %s and %s", cli.FullName, code, out, errOut, beside, lib)
		}
		// The light commands need no full binary.
		if code, out, errOut := result(t, light(filepath.Join(alone, "cosched"), "sim", "--policy", "easy", "--format", "csv")); code != 0 || !strings.HasPrefix(out, "policy,trace,") {
			t.Errorf("sim without %s: exit %d %q %s", cli.FullName, code, out, errOut)
		}
	})
}

// `cosched --version` (and -v) is answered before any command tree is
// built, with the root command's answer; with anything after it, the
// command line is the root's to parse, as before (help, flag errors).
func TestVersionFastPath(t *testing.T) {
	cosched := install(t, t.TempDir(), "cosched")
	for _, args := range [][]string{{"--version"}, {"-v"}, {"--version", "--bogus"}, {"--version", "--help"}, {"-v", "submit"}, {"--version=true"}} {
		var wantOut, wantErr strings.Builder
		wantCode := cli.Run(context.Background(), cli.NewRoot(nil), args, strings.NewReader(""), &wantOut, &wantErr)
		code, out, errOut := result(t, light(cosched, args...))
		if code != wantCode || out != wantOut.String() || errOut != wantErr.String() {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", args, code, out, errOut, wantCode, wantOut.String(), wantErr.String())
		}
		if cli.IsVersion(args) && (code != 0 || !strings.HasPrefix(out, "cosched ") || errOut != "") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the version", args, code, out, errOut)
		}
	}
}
