package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/jss/sweep"
)

// sweepCLI runs a command line in-process as run does, with the user's
// messages (without the packages' prefixes).
func sweepCLI(ctx context.Context, stderr io.Writer, args ...string) (code int, stdout string) {
	var out bytes.Buffer
	code = cli.Run(ctx, newRootCmd(), args, strings.NewReader(""), &out, stderr)
	return code, out.String()
}

// sim runs `cosched sim ARGS` and returns its status, stdout and stderr.
func sim(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var errb bytes.Buffer
	code, out := sweepCLI(context.Background(), &errb, append([]string{"sim"}, args...)...)
	return code, out, errb.String()
}

// tiny is a 6-point sweep: loads 0.4 and 0.8, each space, gang and bcs at
// MPL 2, 50 ms, 10 jobs.
func tiny(out string, extra ...string) []string {
	return append([]string{"sweep", "--jobs", "10", "--load", "0.4,0.8", "--mpl", "2", "--check", "--out", out}, extra...)
}

func TestSimSweepWritesFilesAndTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	code, out, errOut := sim(t, tiny(dir, "--parallel", "2")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	js, cs := filepath.Join(dir, "results.json"), filepath.Join(dir, "results.csv")
	lines := strings.Split(out, "\n")
	if lines[0] != "wrote "+js || lines[1] != "wrote "+cs {
		t.Errorf("stdout does not list the files:\n%s", out)
	}
	for _, want := range []string{"mode", "mpl", "slice", "load", "workload", "mem", "mean_response", "mean_wait", "mean_exec_slowdown", "system_util", "processor_util"} {
		if !strings.Contains(lines[3], want) {
			t.Errorf("table header lacks %q: %q", want, lines[3])
		}
	}
	var modes []string
	for _, l := range lines[4:] {
		if f := strings.Fields(l); len(f) > 0 {
			modes = append(modes, f[0]+" "+f[1]+" "+f[2]+" "+f[3])
		}
	}
	if got := strings.Join(modes, ", "); got != "space 1 - 0.4, gang 2 50ms 0.4, bcs 2 50ms 0.4, space 1 - 0.8, gang 2 50ms 0.8, bcs 2 50ms 0.8" {
		t.Errorf("table rows: %s\n%s", got, out)
	}
	if strings.Contains(out, "points (") {
		t.Error("progress on stdout")
	}
	if !strings.Contains(errOut, "sweep: 6 points, 2 at a time") || !strings.Contains(errOut, "sweep: 6/6 points (100%)") {
		t.Errorf("stderr progress:\n%s", errOut)
	}

	f, err := os.Open(cs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 || strings.Join(recs[0], ",") != strings.Join(sweep.CSVHeader(), ",") || recs[1][1] != "space" || recs[1][3] != "0s" || recs[3][3] != "50ms" || recs[6][4] != "0.8" {
		t.Errorf("CSV:\n%v", recs)
	}
	res, err := sweep.ReadFile(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 6 || len(res.Rows) != 6 || res.Shard != "" || res.Spec.Jobs != 10 || res.Machine.Processors != 32 || res.Machine.MemoryPerProc != 512<<20 {
		t.Errorf("JSON: total %d, %d rows, shard %q, spec %+v, machine %+v", res.Total, len(res.Rows), res.Shard, res.Spec, res.Machine)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files in --out, want 2", len(entries))
	}
}

func TestSimSweepBadFlagsListEveryProblem(t *testing.T) {
	code, out, errOut := sim(t, "sweep", "--mode", "space,local", "--mpl", "0,x", "--slice", "fast,-5ms", "--load", "0.1:1.6",
		"--workload", "w3,w7", "--mem-mean", "1GB,lots", "--jobs", "0", "--seed", "-1", "--policy", "lifo",
		"--shard", "5/4", "--parallel", "0", "--procs", "0", "--mean-runtime", "-1s")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{
		"16 problems with the command line",
		`--mode "local": unknown mode`,
		`--mpl "0": must be from 1 to 64`,
		`--mpl "x": not an integer`,
		`--slice "fast": not a duration`,
		`--slice "-5ms": must be positive`,
		`--load: load range "0.1:1.6": want lo:hi:step`,
		`--workload "w7": unknown workload`,
		`--mem-mean "1GB": no room: more than --mem-per-proc 512MiB`,
		`--mem-mean "lots": not a memory size`,
		"--jobs 0: must be from 1 to 10000000",
		`--seed "-1": not a non-negative integer`,
		`--policy "lifo": unknown policy`,
		`--shard "5/4": want k/n`,
		"--parallel 0: must be from 1 to 1024",
		"--procs 0: must be from 1 to 1048576",
		"--mean-runtime -1s: must be from 0s to 876000h",
		"Run 'cosched sim sweep --help' for usage.",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code, _, errOut := sim(t, "sweep", "--out", t.TempDir(), "--load", "0.8", "stray"); code != 2 || !strings.Contains(errOut, "unknown command") && !strings.Contains(errOut, "accepts 0 arg") {
		t.Errorf("stray argument: exit %d: %s", code, errOut)
	}
}

func TestSimSweepIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if code, _, errOut := sim(t, tiny(dir, "--seed", "1,2")...); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	for _, name := range []string{"results.json", "results.csv"} {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// cancelOnProgress is a stderr that cancels a context at the first
// progress line.
type cancelOnProgress struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (c *cancelOnProgress) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(p, []byte("%)")) {
		c.cancel()
	}
	return c.buf.Write(p)
}

func TestSimSweepCancelledLeavesNoFiles(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnProgress{cancel: cancel}
	code, out := sweepCLI(ctx, stderr, append([]string{"sim"}, tiny(dir, "--load", "0.2:1.2:0.2", "--parallel", "1")...)...)
	errOut := stderr.buf.String()
	if code != 1 || out != "" || !strings.Contains(errOut, "cosched: stopped after ") || !strings.Contains(errOut, "context canceled") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a cancelled sweep left %d files: %v", len(entries), entries[0].Name())
	}
}

func TestSimSweepMachineFlags(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := cosched(t, "", "sim", "sweep", "--mode", "bcs", "--jobs", "8", "--out", dir,
		"--msg-size", "8KiB", "--bandwidth", "50MB", "--latency", "5us", "--job-switch", "2ms", "--process-switch", "200us")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res, err := sweep.ReadFile(context.Background(), filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Machine
	if m.MessageSize != 8192 || m.Bandwidth != 50e6 || m.Latency != 5*time.Microsecond || m.JobSwitch != 2*time.Millisecond || m.ProcessSwitch != 200*time.Microsecond {
		t.Errorf("machine %+v", m)
	}
	code, _, errOut = cosched(t, "", "sim", "sweep", "--mode", "gang,bcs", "--slice", "1ms", "--out", t.TempDir(),
		"--msg-size", "0", "--bandwidth", "fast", "--latency", "-1us", "--job-switch", "1ms")
	if code != 2 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`--msg-size "0"`, `--bandwidth "fast"`, "--latency -1µs", "--slice 1ms: must exceed --job-switch 1ms"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// Without --out a sweep prints its table and writes nothing; shards, which
// exist to be merged, need --out.
func TestSimSweepWithoutOut(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errOut := cosched(t, "", "sim", "sweep", "--mode", "space,bcs", "--jobs", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "mean_response") || strings.Count(out, "\n") != 3 || strings.Contains(out, "wrote") {
		t.Errorf("stdout:\n%s", out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written without --out: %v", entries)
	}
	code, _, errOut = cosched(t, "", "sim", "sweep", "--shard", "1/2")
	if code != 2 || !strings.Contains(errOut, "--out: required with --shard") {
		t.Errorf("shard without --out: exit %d: %s", code, errOut)
	}
}

// --profile replaces the switch costs and adds the overheads, recorded in
// results.json; a bad profile is a usage error naming the file and field.
func TestSimSweepProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profile.json")
	os.WriteFile(path, []byte(`{"version": 1, "created": "2025-01-01T00:00:00Z",
  "host": {"hostname": "h", "cores": 2, "go_version": "go", "os": "linux", "arch": "amd64"},
  "cluster": {"nodes": 4, "slice_ns": 50000000, "mpl": 3, "work": "wall", "realtime_priority": 0, "bcs_bandwidth": 100000000},
  "measured": {"switch_cost_ns": 3000, "switch_cost_p99_ns": 9000, "strobe_overhead_ns": 200000, "strobe_idle_ns": 150000,
    "slices": 80, "relay_latency_ns": 200000, "relay_bandwidth_bps": 30000000, "message_size": 4096, "launch_ns": 10000000,
    "compute_scale": 1.03, "bcs_delivery_ns": 2000000, "bcs_delivery_p90_ns": 4000000, "bcs_solo_sync": true, "bcs_solo_period_ns": 50000000}}`), 0o644)
	out := filepath.Join(dir, "out")
	code, _, errOut := cosched(t, "", "sim", "sweep", "--mode", "gang,bcs", "--jobs", "8", "--out", out, "--profile", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res, err := sweep.ReadFile(context.Background(), filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Machine
	if m.JobSwitch != 200*time.Microsecond || m.ProcessSwitch != 3*time.Microsecond || m.Overheads == nil ||
		m.Overheads.Delivery != 2*time.Millisecond || !m.Overheads.SoloSync || m.Overheads.RelayLatency != 200*time.Microsecond {
		t.Errorf("machine %+v overheads %+v", m, m.Overheads)
	}
	// The delivery delay must fit the slice.
	code, _, errOut = cosched(t, "", "sim", "sweep", "--mode", "bcs", "--slice", "2ms", "--jobs", "8", "--profile", path)
	if code != 2 || !strings.Contains(errOut, "slice 2ms does not exceed the profile's process switch 3µs and delivery delay 2ms") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version": 1, "colour": "red"}`), 0o644)
	code, _, errOut = cosched(t, "", "sim", "sweep", "--jobs", "8", "--profile", bad)
	if code != 2 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, `unknown field "colour"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// The simulator's former mode names (bf, bgs) are still read, with a
// warning, and the results use today's.
func TestSimSweepReadsFormerModeNames(t *testing.T) {
	code, out, errOut := sim(t, "sweep", "--mode", "bf,bgs", "--jobs", "10")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{`warning: --mode: mode "bf" is the former name of space`, `warning: --mode: mode "bgs" is the former name of gang`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if lines := strings.Split(out, "\n"); len(lines) < 3 || strings.Fields(lines[1])[0] != "space" || strings.Fields(lines[2])[0] != "gang" {
		t.Errorf("table:\n%s", out)
	}
}
