package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/localcluster"
)

// clusterCLI starts `cosched cluster up upArgs…` in a state directory of
// its own and returns it, with a function that runs cosched commands on
// that cluster (failing the test if one fails). The cluster is brought
// down when the test ends (a second down, after the test's own, is a
// no-op).
func clusterCLI(t testing.TB, upArgs ...string) (string, func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(), "COSCHED_STATE_DIR="+dir)
	run := func(args ...string) string {
		t.Helper()
		cmd := coschedCmd(args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cosched %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run(append([]string{"cluster", "up"}, upArgs...)...)
	t.Cleanup(func() {
		cmd := coschedCmd("cluster", "down")
		cmd.Env = env
		cmd.Run()
	})
	return dir, run
}

// Killing an agent (SIGKILL) ends its ranks and fails its job; the other
// agents kill their ranks of it; cluster down then leaves no process. Run
// with real agent processes started by `cosched cluster up`.
func TestAgentKilledFailsJobAndClusterDownLeavesNothing(t *testing.T) {
	dir, run := clusterCLI(t, "-N", "3", "--mode", "gang", "--slice", "20ms", "--mpl", "2")
	var rec struct {
		API    string `json:"api"`
		Agents []struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"agents"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	lc, err := localcluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	client := lc.Client()
	id, err := client.Submit(context.Background(), api.JobSpec{Command: busy, Processors: 3, TimeLimit: api.Duration{D: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	eventually(t, 20*time.Second, func() error {
		if pids = jobPIDs(t, dir, id); len(pids) != 3 {
			return fmt.Errorf("%d of 3 ranks", len(pids))
		}
		return nil
	})
	victim := rec.Agents[2]
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		j, err := client.Job(context.Background(), id)
		if err != nil {
			return err
		}
		if j.State != api.Failed || !strings.Contains(j.Reason, victim.Name) {
			return fmt.Errorf("job %s (%s), want FAILED naming %s", j.State, j.Reason, victim.Name)
		}
		return nil
	})
	eventually(t, 20*time.Second, func() error {
		if left := jobPIDs(t, dir, id); len(left) > 0 {
			return fmt.Errorf("ranks left after the agent died: %v", left)
		}
		return nil
	})
	// A new job still runs on the survivors.
	id2, err := client.Submit(context.Background(), api.JobSpec{Command: []string{"true"}, Processors: 2, TimeLimit: api.Duration{D: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := client.Wait(context.Background(), id2, 20*time.Millisecond); err != nil || j.State != api.Completed {
		t.Fatalf("job on the survivors: %+v %v", j, err)
	}
	id3, err := client.Submit(context.Background(), api.JobSpec{Command: busy, Processors: 2, TimeLimit: api.Duration{D: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if n := len(jobPIDs(t, dir, id3)); n != 2 {
			return fmt.Errorf("%d of 2 ranks", n)
		}
		return nil
	})
	out := run("cluster", "down")
	if !strings.Contains(out, "stopped") {
		t.Errorf("cluster down: %s", out)
	}
	for _, a := range rec.Agents {
		if procState(a.PID) != 0 && procState(a.PID) != 'Z' {
			t.Errorf("agent %s (pid %d) still running", a.Name, a.PID)
		}
	}
	if left := jobPIDs(t, dir, id3); len(left) > 0 {
		t.Errorf("ranks left after cluster down: %v", left)
	}
}

// `cosched bench strobe` end to end: it starts a gang cluster, measures
// every agent's slices, reports them, and leaves no agent behind.
func TestBenchStrobeCommand(t *testing.T) {
	cmd := coschedCmd("bench", "strobe", "-N", "3", "--slice", "10ms", "--duration", "1s", "--json")
	// Its state directory goes under this test's own TMPDIR: the scan for
	// leftovers below must not see another test's benchmark.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench strobe: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Agents   int               `json:"agents"`
		Realtime map[string]string `json:"realtime"`
		Slices   int               `json:"slices"`
		Applied  uint64            `json:"applied"`
		Lost     uint64            `json:"lost"`
		Skew     struct{ N int }   `json:"skew"`
		Latency  struct{ N int }   `json:"latency"`
		Overhead struct {
			N    int
			Mean time.Duration
		} `json:"overhead"`
		OverheadFraction float64 `json:"overhead_fraction"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	// About 100 slices in a second; each seen by two or more agents yields
	// a skew and two or three latencies, each latency is an applied strobe.
	// (Agents are polled one after another, so the last slice may be
	// missing from the first agent polled: no exact count per agent; and an
	// agent's applied counter and its latencies are read at different
	// moments: a strobe between them counts in one only.)
	if rep.Agents != 3 || len(rep.Realtime) != 3 || rep.Slices < 50 || rep.Skew.N != rep.Slices ||
		rep.Latency.N < 2*rep.Slices || rep.Latency.N > 3*rep.Slices || rep.Applied+uint64(rep.Agents) < uint64(rep.Latency.N) || rep.Overhead.N == 0 {
		t.Fatalf("report %+v\n%s", rep, out)
	}
	if want := float64(rep.Overhead.Mean) / float64(10*time.Millisecond); rep.OverheadFraction != want {
		t.Fatalf("overhead fraction %v, want %v", rep.OverheadFraction, want)
	}
	// The cluster is gone: no process runs with the benchmark's state dir.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(tmp)) {
			t.Fatalf("left behind: %s: %q", p, b)
		}
	}
}

// cluster up checks every flag itself, before starting anything, and
// names each bad one with its limit.
func TestClusterUpBadFlags(t *testing.T) {
	state := t.TempDir()
	code, _, stderr := cosched(t, "", "cluster", "up", "--state-dir", state, "-N", "0", "--slice", "100us", "--mpl", "0",
		"--bandwidth", "-1", "--processors", "0", "--realtime-priority", "100", "--timeout", "0s")
	if code != 2 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"7 problems", "-N 0: must be from 1 to 256", "--slice 100µs: must be from 1ms to 1h0m0s",
		"--mpl 0: must be from 1 to 64", `--bandwidth "-1": want a size per second`, "--processors 0: must be from 1 to 1024",
		"--realtime-priority 100: must be 0 (off) to 99", "--timeout 0s: must be positive"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, _, stderr = cosched(t, "", "cluster", "up", "--state-dir", state, "--mode", "space", "--mpl", "3")
	if code != 2 || !strings.Contains(stderr, "--mpl 3: must be 1 in space mode") {
		t.Fatalf("space with --mpl 3: exit %d\n%s", code, stderr)
	}
	code, _, stderr = cosched(t, "", "cluster", "up", "--state-dir", state, "--slice", "1ns")
	if code != 2 || !strings.Contains(stderr, "--slice 1ns: must be from 1ms") {
		t.Fatalf("--slice 1ns: exit %d\n%s", code, stderr)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Fatalf("something was started: %v", entries)
	}
}

// A benchmark job submitted with the CLI runs on a bcs cluster, and
// `nodes --stats` reports the cluster's configuration and slot reuse.
func TestSubmitBenchAndNodesStats(t *testing.T) {
	state := t.TempDir()
	code, out, stderr := cosched(t, "", "cluster", "up", "--state-dir", state, "-N", "2", "--mode", "bcs", "--mpl", "2",
		"--slice", "20ms", "--realtime-priority", "0")
	if code != 0 {
		t.Fatalf("cluster up: exit %d\n%s%s", code, out, stderr)
	}
	t.Cleanup(func() { cosched(t, "", "cluster", "down", "--state-dir", state) })
	rec, err := os.ReadFile(filepath.Join(state, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Agents []struct{ API string } `json:"agents"`
	}
	if err := json.Unmarshal(rec, &c); err != nil || len(c.Agents) != 2 {
		t.Fatalf("cluster.json: %v\n%s", err, rec)
	}
	code, out, stderr = cosched(t, "", "submit", "--addr", c.Agents[1].API, "--state-dir", state, "-n", "2", "--bench", "20ms,0ms,barrier,NB",
		"--iterations", "20", "--work", "wall", "--parsable")
	if code != 0 {
		t.Fatalf("cosched submit --bench: exit %d\n%s", code, stderr)
	}
	id, err := api.ParseJobID(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("submit printed %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lc, err := localcluster.Load(state)
	if err != nil {
		t.Fatal(err)
	}
	j, err := lc.Client().Wait(ctx, id, 20*time.Millisecond)
	if err != nil || j.State != api.Completed {
		t.Fatalf("job %d: %+v %v", id, j, err)
	}
	for _, r := range j.Ranks {
		if r.Bench == nil || r.Bench.Iterations != 20 || r.Bench.Compute.D <= 0 {
			t.Fatalf("rank %d bench stats %+v", r.Rank, r.Bench)
		}
	}
	code, out, stderr = cosched(t, "", "nodes", "--stats", "--addr", c.Agents[0].API, "--state-dir", state)
	if code != 0 || !strings.Contains(out, "REUSES") || !strings.Contains(out, "bcs mode, MPL 2, slice 20ms") {
		t.Fatalf("cosched nodes --stats: exit %d\n%s%s", code, out, stderr)
	}
}

// cluster up --mpi pmi1 makes PMI-1 the default of the cluster's jobs: an
// MPICH program submitted without --mpi runs, every rank knowing its rank
// and the job's size.
func TestClusterUpMPIDefault(t *testing.T) {
	// MPICH's own wrapper by name: with Open MPI installed too, "mpicc" is
	// whichever the alternatives pick.
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		cc, err = exec.LookPath("mpicc")
	}
	if err != nil {
		t.Skip("mpicc not found: install Debian's mpich and libmpich-dev (.ci/run does)")
	}
	prog := filepath.Join(t.TempDir(), "ring")
	if b, err := exec.Command(cc, "-O2", "-o", prog, filepath.Join("..", "..", "pmi", "testdata", "ring.c")).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, b)
	}
	dir, run := clusterCLI(t, "-N", "2", "--mode", "space", "--mpi", "pmi1", "--realtime-priority", "0")
	id := strings.TrimSpace(run("submit", "-n", "2", "-t", "1m", "--parsable", "--", prog, "2"))
	lc, err := localcluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	jid, _ := api.ParseJobID(id)
	j, err := lc.Client().Wait(context.Background(), jid, 50*time.Millisecond)
	if err != nil || j.State != api.Completed {
		t.Fatalf("MPI job without --mpi on a --mpi pmi1 cluster: %+v %v", j, err)
	}
	out := run("output", "--label", id)
	for r := range 2 {
		if want := fmt.Sprintf("%d: rank %d of 2 ok", r, r); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
