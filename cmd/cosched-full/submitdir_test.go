package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A job starts in the directory it was submitted from (not the one the
// cluster was started in), a relative program is found there, -D chooses
// another and a missing one fails the job naming the node and the
// directory; submit --wait exits with the job's status (0 for CD, the
// ranks' code for F) and stops waiting at Ctrl-C without cancelling;
// show prints the job's fields.
func TestSubmitDirWaitAndShow(t *testing.T) {
	state := t.TempDir()
	env := append(os.Environ(), "COSCHED_STATE_DIR="+state, "COSCHED_ADDR=", "COSCHED_SOCKET=")
	cosched := func(dir string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := coschedCmd(args...)
		cmd.Env, cmd.Dir = env, dir
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var x *exec.ExitError
		if err != nil && !errors.As(err, &x) {
			t.Fatalf("cosched %v: %v", args, err)
		}
		return o.String(), e.String(), cmd.ProcessState.ExitCode()
	}
	if out, errs, code := cosched("", "cluster", "up", "-N", "2", "--mode", "space", "--mpl", "1", "--realtime-priority", "0"); code != 0 {
		t.Fatalf("cluster up: %d\n%s%s", code, out, errs)
	}
	t.Cleanup(func() { cosched("", "cluster", "down") })

	work := t.TempDir()
	real, err := filepath.EvalSymlinks(work)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "where.sh"), []byte("#!/bin/sh\necho \"rank $COSCHED_RANK in $(pwd)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	id, errs, code := cosched(work, "submit", "-n", "2", "-t", "1m", "-W", "--parsable", "--", "./where.sh")
	id = strings.TrimSpace(id)
	if code != 0 {
		t.Fatalf("submit -W ./where.sh from %s: exit %d, %q %s", work, code, id, errs)
	}
	if out, errs, _ := cosched("", "output", "--label", id); out != fmt.Sprintf("0: rank 0 in %s\n1: rank 1 in %s\n", real, real) {
		t.Errorf("output of a job submitted from %s:\n%s%s", work, out, errs)
	}

	// -D, relative to where submit runs; a failed job's code is --wait's.
	sub := filepath.Join(work, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	failed, errs, code := cosched(work, "submit", "-J", "three", "-n", "1", "-t", "1m", "-W", "--parsable", "-D", "sub", "--", "sh", "-c", "pwd; exit 3")
	failed = strings.TrimSpace(failed)
	if code != 3 || !strings.Contains(errs, "job "+failed+" ended FAILED: rank 0 on a") {
		t.Errorf("submit -W of a job exiting 3: exit %d, stderr %q", code, errs)
	}
	if out, _, _ := cosched("", "output", failed); out != filepath.Join(real, "sub")+"\n" {
		t.Errorf("-D sub ran in %q", out)
	}
	out, errs, code := cosched("", "show", failed)
	for _, want := range []string{"JobId=" + failed + " JobName=three\n", "JobState=FAILED Reason=rank 0 on a", "ExitCode=3:0",
		"TimeLimit=00:01:00", "NumNodes=1 NumTasks=1 NodeList=a", "Command=sh -c pwd; exit 3\n", "WorkDir=" + filepath.Join(work, "sub") + "\n",
		"MPI=none", "SubmitTime=2", "EndTime=2"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show %s: exit %d, no %q in\n%s%s", failed, code, want, out, errs)
		}
	}

	// A directory the nodes lack fails the job, saying where.
	_, errs, code = cosched(work, "submit", "-n", "1", "-t", "1m", "-W", "-D", "/no/such/dir", "--", "true")
	if code == 0 || !strings.Contains(errs, "could not start") || !strings.Contains(errs, " on a") ||
		!strings.Contains(errs, "working directory /no/such/dir: no such file or directory") {
		t.Errorf("-D /no/such/dir: exit %d, stderr %q", code, errs)
	}

	// An MPICH program of several ranks without PMI is refused at its
	// launch, saying what to do, instead of hanging to its limit.
	cc, err := exec.LookPath("mpicc.mpich") // MPICH's, whatever the alternatives pick
	if err != nil {
		cc, err = exec.LookPath("mpicc")
	}
	if err == nil {
		if b, err := exec.Command(cc, "-O2", "-o", filepath.Join(work, "ring"), filepath.Join("..", "..", "pmi", "testdata", "ring.c")).CombinedOutput(); err != nil {
			t.Fatalf("mpicc: %v\n%s", err, b)
		}
		_, errs, code := cosched(work, "submit", "-n", "2", "-t", "1m", "-W", "--mpi", "none", "--", "./ring", "2")
		if code == 0 || !strings.Contains(errs, "./ring is an MPI program (it needs libmpich") || !strings.Contains(errs, "submit it with --mpi pmi1") {
			t.Errorf("MPI program without PMI: exit %d, stderr %q", code, errs)
		}
	} else {
		t.Log("mpicc not found: the MPI check is not run (install Debian's mpich and libmpich-dev, as .ci/run does)")
	}

	// Ctrl-C stops waiting; the job runs on.
	cmd := coschedCmd("submit", "-n", "1", "-t", "1m", "-W", "--parsable", "--", "sleep", "300")
	cmd.Env, cmd.Dir = env, work
	var werr bytes.Buffer
	cmd.Stderr = &werr // read once the process has ended
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pipe).ReadString('\n') // written before the wait begins
	sleeper := strings.TrimSpace(line)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("submit -W: %v, %q\n%s", err, line, werr.String())
	}
	eventually(t, 30*time.Second, func() error {
		if out, _, _ := cosched("", "queue", "-j", sleeper, "--noheader", "-o", "%t"); out != "R\n" {
			return fmt.Errorf("job %s not running: %q", sleeper, out)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 130 || !strings.Contains(werr.String(), "stopped waiting; job "+sleeper+" goes on") {
		t.Errorf("submit -W after SIGINT: %v, exit %d, stderr %q", err, cmd.ProcessState.ExitCode(), werr.String())
	}
	if out, _, _ := cosched("", "queue", "-j", sleeper, "--noheader", "-o", "%t"); out != "R\n" {
		t.Errorf("job %s after its waiter's SIGINT: %q, want R", sleeper, out)
	}
	cosched("", "cancel", sleeper)
}
