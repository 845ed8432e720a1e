package main

import (
	"fmt"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlurmHabitsOnACluster runs the Slurm-like commands against a real
// two-agent cluster: -J, -N, Slurm time limits, a USER column, queue's
// -o/--noheader/-j/-t, benchmark job names and a silent cancel.
func TestSlurmHabitsOnACluster(t *testing.T) {
	bin := coschedBinary(t)
	state := filepath.Join(t.TempDir(), "state")
	sh := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cmd.Environ(), "COSCHED_STATE_DIR="+state, "COSCHED_ADDR=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// -n/--agents, cluster up's old spelling of -N/--nodes, still works.
	if out, err := sh("cluster", "up", "-n", "2", "--mode", "space", "--mpl", "1", "--realtime-priority", "0"); err != nil ||
		!strings.Contains(out, "-n/--agents is deprecated, use -N/--nodes") {
		t.Fatalf("cluster up -n: %v\n%s", err, out)
	}
	t.Cleanup(func() { sh("cluster", "down") })
	id1, err := sh("submit", "-J", "spin", "-N", "2", "-t", "1-00:00", "--parsable", "--", "sleep", "300")
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, id1)
	}
	id1 = strings.TrimSpace(id1)
	id2, err := sh("submit", "-n", "2", "-t", "10", "--parsable", "--bench", "10ms,5ms,barrier,B", "--iterations", "100000")
	if err != nil {
		t.Fatalf("submit --bench: %v\n%s", err, id2)
	}
	id2 = strings.TrimSpace(id2)
	if out, err := sh("submit", "-n", "1", "-t", "1:2:3:4", "--", "true"); err == nil || !strings.Contains(out, `-t "1:2:3:4"`) {
		t.Errorf("bad limit accepted or unexplained: %v\n%s", err, out)
	}
	if out, err := sh("submit", "-N", "3", "-n", "2", "-t", "1", "--", "true"); err == nil || !strings.Contains(out, "-n 2: fewer tasks than -N 3 nodes") {
		t.Errorf("-n < -N: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "submit", "--procs", "1", "--name", "old", "-t", "1", "--parsable", "--", "true")
	cmd.Env = append(cmd.Environ(), "COSCHED_STATE_DIR="+state, "COSCHED_ADDR=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) == "" || strings.Contains(string(out), "deprecated") ||
		!strings.Contains(stderr.String(), "--procs is deprecated, use -n/--ntasks") || !strings.Contains(stderr.String(), "--name is deprecated, use -J/--job-name") {
		t.Errorf("deprecated spellings: %v\nstdout %q\nstderr %q", err, out, stderr.String())
	}
	// The first job starts (both nodes), the benchmark job waits behind it.
	eventually(t, 30*time.Second, func() error {
		out, err := sh("queue", "-j", id1, "--noheader", "-o", "%t")
		if err != nil || out != "R\n" {
			return fmt.Errorf("job %s: %q %v", id1, out, err)
		}
		return nil
	})
	out, err := sh("queue", "-j", id1+","+id2, "--noheader", "-o", "%i %j %u %C %l %t")
	if err != nil {
		t.Fatalf("queue: %v\n%s", err, out)
	}
	user := currentUser(t)
	want := id1 + " spin " + user + " 2 1-00:00:00 R\n" + id2 + " bench:10ms,5ms,barrier,B " + user + " 2 10:00 PD\n"
	if out != want {
		t.Errorf("queue -o:\n%s\nwant:\n%s", out, want)
	}
	if out, err := sh("queue", "-t", "PD"); err != nil || !strings.Contains(out, "USER") || strings.Contains(out, " spin ") || !strings.Contains(out, "bench:") {
		t.Errorf("queue -t PD: %v\n%s", err, out)
	}
	if out, err := sh("cancel", id1, id2); err != nil || out != "" {
		t.Errorf("cancel printed %q (%v); scancel is silent", out, err)
	}
	// A running job is cancelled once its ranks are gone.
	eventually(t, 30*time.Second, func() error {
		if out, err := sh("queue", "-t", "CA", "--noheader", "-o", "%i"); err != nil || out != id1+"\n"+id2+"\n" {
			return fmt.Errorf("cancelled jobs: %v %q", err, out)
		}
		return nil
	})
	if out, err := sh("cancel", "999"); err == nil || out == "" {
		t.Errorf("cancelling an unknown job: %v %q", err, out)
	}
	// --export: the named variables of the submitting shell reach the
	// rank, nothing else of it does.
	cmd = exec.Command(bin, "submit", "-n", "1", "-t", "1", "--parsable", "--export=I14_SET,I14_GIVEN=given", "--",
		"sh", "-c", `echo "$I14_SET $I14_GIVEN ${I14_OTHER:-unset}"`)
	cmd.Env = append(cmd.Environ(), "COSCHED_STATE_DIR="+state, "COSCHED_ADDR=", "I14_SET=set", "I14_OTHER=other")
	out3, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("submit --export: %v\n%s", err, out3)
	}
	id3 := strings.TrimSpace(string(out3))
	eventually(t, 30*time.Second, func() error {
		if out, err := sh("queue", "-j", id3, "--noheader", "-o", "%t"); err != nil || out != "CD\n" {
			return fmt.Errorf("job %s: %q %v", id3, out, err)
		}
		return nil
	})
	if out, err := sh("output", id3); err != nil || out != "set given unset\n" {
		t.Errorf("output of the --export job: %q %v, want %q", out, err, "set given unset\n")
	}
}

// currentUser is the name queue shows for this process's jobs.
func currentUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
