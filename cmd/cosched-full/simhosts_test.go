package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosched/cosched/jss"
)

// Hosts A (4 procs, 1 GB) and B (8 procs, 16 GB); field 10 is the
// requested memory per processor in KB. Job 1 (2 × 2 GB, 10 s) and job 2
// (2 × 4 GB, 20 s) go to B (A lacks the memory); job 3 (2 × 3 GB) at 1 s
// has B's processors but only 4 GB there: it starts at 10 s when job 1
// ends. Job 4 (1 × 512 MB) at 1 s starts at once on A. Job 5 (9 procs)
// fits no host: dropped.
const hostsMachine = "# two hosts\nA 4 1GB\nB 8 16GB # the big one\n"

const hostsTrace = `; MaxProcs: 12
1 0 -1 10 2 -1 -1 2 10 2097152 1 1 1 -1 -1 -1 -1 -1
2 0 -1 20 2 -1 -1 2 20 4194304 1 1 1 -1 -1 -1 -1 -1
3 1 -1 5 2 -1 -1 2 5 3145728 1 1 1 -1 -1 -1 -1 -1
4 1 -1 5 1 -1 -1 1 5 524288 1 1 1 -1 -1 -1 -1 -1
5 2 -1 5 9 -1 -1 9 5 -1 1 1 1 -1 -1 -1 -1 -1
`

func jobStarts(t *testing.T, csvPath string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, ",")
		out[f[0]] = f[2] + "-" + f[3] // start-end
	}
	return out
}

func TestSimMachineFileMemoryAndBestFit(t *testing.T) {
	trace := writeFile(t, "h.swf", hostsTrace)
	machine := writeFile(t, "hosts.txt", hostsMachine)
	csv := filepath.Join(t.TempDir(), "jobs.csv")
	code, out, errOut := cosched(t, "", "sim", "--trace", trace, "--machine-file", machine, "--policy", "fcfs-bf", "--format", "json", "--jobs-csv", csv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []jss.TraceResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res) != 1 || res[0].Hosts == nil || res[0].Hosts.Unfit != 1 || res[0].Jobs.Dropped.NoHost != 1 || res[0].Processors != 12 || len(res[0].Hosts.Hosts) != 2 {
		t.Fatalf("result %+v", res)
	}
	got := jobStarts(t, csv)
	want := map[string]string{"1": "0-10", "2": "0-20", "3": "10-15", "4": "1-6"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("job %s ran %q, want %q", id, got[id], w)
		}
	}
	if len(got) != 4 {
		t.Errorf("jobs %v, want 4", got)
	}
}

// EQspatial without a machine file: one host of the trace's 8 processors.
// Job 1 (8 procs, 600 s) alone from 0; job 2 (8, 600 s) at 360 s: 4 each
// at half speed; job 1 ends at 360 + 2·240 = 840 s, job 2 then has 240 s
// done and ends at 1,200 s.
func TestSimEQSpatialByName(t *testing.T) {
	trace := writeFile(t, "eq.swf", "; MaxProcs: 8\n1 0 -1 600 8 -1 -1 8 600 -1 1 1 1 -1 -1 -1 -1 -1\n2 360 -1 600 8 -1 -1 8 600 -1 1 1 1 -1 -1 -1 -1 -1\n")
	csv := filepath.Join(t.TempDir(), "jobs.csv")
	code, out, errOut := cosched(t, "", "sim", "--trace", trace, "--policy", "eqspatial", "--eq-interval", "5m", "--jobs-csv", csv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "repartitions at most every 5m0s (full request after off): 3 repartitions") {
		t.Errorf("output lacks the eqspatial summary:\n%s", out)
	}
	got := jobStarts(t, csv)
	if got["1"] != "0-840" || got["2"] != "360-1200" {
		t.Errorf("jobs %v, want 1: 0-840, 2: 360-1200", got)
	}
}

func TestSimImmediateServiceByName(t *testing.T) {
	code, out, errOut := cosched(t, "", "sim", "--trace", writeFile(t, "h.swf", hostsTrace), "--machine-file", writeFile(t, "hosts.txt", hostsMachine),
		"--policy", "fcfs-bf,sjf-bf", "--immediate-service", "--is-quantum", "30s", "--is-memory", "4GB", "--is-min-run", "1s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Job 3 (6 GB) is over the 4 GB limit; no other job waits.
	if !strings.Contains(out, "immediate service (quantum 30s, memory ≤ 4GB, victims run > 1s): 0 quanta") {
		t.Errorf("output:\n%s", out)
	}
}

func TestSimHostsFlagErrors(t *testing.T) {
	machine := writeFile(t, "hosts.txt", hostsMachine)
	bad := writeFile(t, "bad.txt", "# hosts\nA 4 1GB\nB x 2GB\n")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--machine-file", bad, "--policy", "fcfs-bf"}, []string{"--machine-file: " + bad + `:3: processors "x": want a whole number`}},
		{[]string{"--machine-file", filepath.Join(t.TempDir(), "none.txt"), "--policy", "fcfs-bf"}, []string{"--machine-file: open"}},
		{[]string{"--machine-file", machine, "--policy", "easy,fcfs-bf", "--procs", "8"}, []string{"--policy easy: does not run on hosts", "--procs 8: not with --machine-file"}},
		{[]string{"--policy", "easy", "--immediate-service"}, []string{"--immediate-service applies only to the priority-backfill policies"}},
		{[]string{"--policy", "fcfs-bf", "--is-quantum", "2m"}, []string{"--is-quantum: applies only with --immediate-service"}},
		{[]string{"--policy", "fcfs-bf", "--immediate-service", "--is-quantum", "0s", "--is-memory", "lots", "--is-min-run", "-1s"}, []string{"--is-quantum 0s: must be positive", `--is-memory "lots"`, "--is-min-run -1s: must not be negative"}},
		{[]string{"--policy", "fcfs-bf", "--eq-interval", "1m"}, []string{"--eq-interval: applies only with --policy eqspatial"}},
		{[]string{"--policy", "eqspatial", "--eq-interval", "-1m", "--eq-full-after", "-1h"}, []string{"--eq-interval -1m0s: must not be negative", "--eq-full-after -1h0m0s: must not be negative"}},
	} {
		code, _, errOut := cosched(t, "", append([]string{"sim"}, c.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
}

func TestSweepRefusesEQSpatial(t *testing.T) {
	code, _, errOut := cosched(t, "", "sim", "sweep", "--policy", "eqspatial")
	if code != 2 || !strings.Contains(errOut, "--policy eqspatial: runs on hosts of a machine file in cosched sim only") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
