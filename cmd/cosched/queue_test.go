package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
)

func TestQueueFormat(t *testing.T) {
	jobs := []api.Job{
		{ID: 7, Spec: api.JobSpec{Name: "solver", User: "alice", Processors: 4, TimeLimit: api.Duration{D: 90 * time.Minute}},
			State: api.Running, Nodes: []string{"a0", "a0", "a1", "a1"}, Elapsed: api.Duration{D: 123 * time.Second}},
		{ID: 12, Spec: api.JobSpec{Bench: "50ms,25ms,news,NB", Processors: 2, TimeLimit: api.Duration{D: 26 * time.Hour}},
			State: api.Pending, Reason: "no room in any row"},
	}
	for _, tc := range []struct {
		format   string
		noHeader bool
		want     string
	}{
		{"%i %j %u %t %T %M %l %D %C %R", false, "JOBID NAME USER ST STATE TIME TIME_LIMIT NODES CPUS NODELIST(REASON)\n" +
			"7 solver alice R RUNNING 2:03 1:30:00 2 4 a0,a1\n" +
			"12 bench:50ms,25ms,news,NB - PD PENDING 0:00 1-02:00:00 - 2 (no room in any row)\n"},
		{"%.5i|%-4j|%P|%%", true, "    7|solv|-|%\n   12|benc|-|%\n"},
		{"%N %r", true, "a0,a1 -\n no room in any row\n"},
	} {
		cols, err := parseQueueFormat(tc.format)
		if err != nil {
			t.Fatalf("%q: %v", tc.format, err)
		}
		var b strings.Builder
		writeQueueFormat(&b, cols, jobs, tc.noHeader)
		if b.String() != tc.want {
			t.Errorf("%q:\n%s\nwant:\n%s", tc.format, b.String(), tc.want)
		}
	}
	for _, bad := range []string{"%x", "%.", "%5", "%99999i"} {
		if _, err := parseQueueFormat(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var b strings.Builder
	writeQueue(&b, jobs, false, false)
	if lines := strings.Split(b.String(), "\n"); !strings.HasPrefix(lines[0], "JOBID  NAME") || !strings.Contains(lines[0], "USER") ||
		!strings.Contains(lines[1], "alice") || !strings.Contains(lines[1], "2:03") || !strings.Contains(lines[2], "bench:50ms,25ms…") {
		t.Errorf("default table:\n%s", b.String())
	}
}

func TestQueueStates(t *testing.T) {
	got, err := parseStates("pd,RUNNING,canceled")
	if err != nil || len(got) != 3 || !got[api.Pending] || !got[api.Running] || !got[api.Cancelled] {
		t.Errorf("%v %v", got, err)
	}
	if all, err := parseStates("all"); err != nil || len(all) != 6 {
		t.Errorf("all: %v %v", all, err)
	}
	if _, err := parseStates("R,XX"); err == nil || !strings.Contains(err.Error(), `state "XX"`) {
		t.Errorf("bad state: %v", err)
	}
}

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
	user := currentUser()
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
}

func TestRoundSig(t *testing.T) {
	for d, want := range map[time.Duration]string{
		123456 * time.Nanosecond:      "123µs",
		1234567 * time.Nanosecond:     "1.23ms",
		40117481189 * time.Nanosecond: "40.1s",
		999 * time.Nanosecond:         "999ns",
		2*time.Minute + 3*time.Second: "2m3s",
	} {
		if got := roundSig(d).String(); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}
