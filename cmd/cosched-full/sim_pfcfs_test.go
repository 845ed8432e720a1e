package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
)

// The hand-worked case of jss's TestSimulateTracePFCFS (machine of 10, wide
// from 5): fcfs has makespan 50, sum of flow times 189 and weighted flow
// 17,040; pfcfs with Δ = 10 s and n = 3 has 70, 190 and 19,400.
const pfcfsTrace = `; MaxProcs: 10
1 0 -1 30 4 -1 -1 4 30 -1 1 1 1 -1 -1 -1 -1 -1
2 0 -1 30 3 -1 -1 3 30 -1 1 1 1 -1 -1 -1 -1 -1
3 0 -1 50 2 -1 -1 2 50 -1 1 1 1 -1 -1 -1 -1 -1
4 5 -1 20 6 -1 -1 6 20 -1 1 1 1 -1 -1 -1 -1 -1
5 6 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
`

func TestSimPFCFSJSONRelativeToFCFS(t *testing.T) {
	path := writeFile(t, "base.swf", pfcfsTrace)
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "pfcfs", "--pfcfs-switch", "10s", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []jss.TraceResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res) != 1 || res[0].Policy != "pfcfs" || res[0].PFCFS == nil || res[0].PFCFS.VsFCFS == nil {
		t.Fatalf("results %+v", res)
	}
	p := res[0].PFCFS
	if p.WidePercent != 50 || p.WideFrom != 5 || p.Switch != 10 || p.Switches != 3 || p.Preemptions != 5 {
		t.Errorf("summary %+v", p)
	}
	rel := p.VsFCFS
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(rel.Makespan, 70.0/50) || !near(rel.SumFlow, 190.0/189) || !near(rel.WeightedFlow, 19400.0/17040) {
		t.Errorf("relative to fcfs %+v", rel)
	}
}

// The even case: n = 2 and a penalty of 1 s. Jobs 1 and 3 are preempted at
// 5 (26 and 46 left), job 4 at 15 (11 left) while 1 and 3 resume and run
// to completion (41, 61); job 4 resumes at 61 and ends at 72. Makespan 72.
func TestSimPFCFSTableEvenSwitchesWithPenalty(t *testing.T) {
	path := writeFile(t, "base.swf", pfcfsTrace)
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "fcfs,pfcfs",
		"--pfcfs-switch", "10s", "--pfcfs-switches", "2", "--pfcfs-penalty", "1s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"pfcfs  wide: ≥ 50% of the machine (≥ 5 processors); start delay 0s, switch every 10s, at most 2 switches, penalty 1s",
		"1 wide jobs, 1 started by preempting; 3 preemptions",
		"relative to fcfs: makespan 1.440,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimPFCFSBadFlags(t *testing.T) {
	path := writeFile(t, "base.swf", pfcfsTrace)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--policy", "pfcfs", "--pfcfs-wide", "0"}, []string{"--pfcfs-wide 0: must be a percentage in (0, 100]"}},
		{[]string{"--policy", "pfcfs", "--pfcfs-wide", "150"}, []string{"--pfcfs-wide 150"}},
		{[]string{"--policy", "pfcfs", "--pfcfs-switches", "0"}, []string{"--pfcfs-switches 0: must be at least 1"}},
		{[]string{"--policy", "pfcfs", "--pfcfs-switch", "0s"}, []string{"--pfcfs-switch 0s: must be positive"}},
		{[]string{"--policy", "pfcfs", "--pfcfs-delay", "-1s", "--pfcfs-penalty", "-2s"},
			[]string{"2 problems", "--pfcfs-delay -1s: must not be negative", "--pfcfs-penalty -2s: must not be negative"}},
		{[]string{"--policy", "easy", "--pfcfs-switches", "5"}, []string{"--pfcfs-switches: applies only with --policy pfcfs"}},
		{[]string{"--policy", "pfcfs", "--pfcfs-switch", "ten"}, []string{"--pfcfs-switch"}},
		{[]string{"--policy", "pfcfss"}, []string{`unknown policy "pfcfss"`, "pfcfs"}},
	} {
		code, _, errOut := cosched(t, "", append([]string{"sim", "--trace", path}, tc.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
}

func TestSweepPFCFS(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	code, _ := sweepCLI(context.Background(), &errb, "sim", "sweep", "--mode", "space", "--policy", "pfcfs",
		"--load", "0.9", "--jobs", "60", "--pfcfs-switch", "1m", "--pfcfs-switches", "2", "--check", "--parallel", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res sweep.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	p := res.Machine.PFCFS
	if res.Spec.Policy != "pfcfs" || p == nil || p.WidePercent != 50 || p.Switch != time.Minute || p.Switches != 2 {
		t.Fatalf("spec %+v, machine %+v", res.Spec, res.Machine)
	}
	if len(res.Rows) != 1 || res.Rows[0].Policy != "pfcfs" || res.Rows[0].Simulated != 60 {
		t.Fatalf("rows %+v", res.Rows)
	}
}

func TestSweepPFCFSBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "pfcfs"}, "--policy pfcfs: space sharing, runs with --mode space only (got --mode gang)"},
		{[]string{"--mode", "space", "--policy", "pfcfs", "--pfcfs-switches", "0"}, "--pfcfs-switches 0: must be at least 1"},
		{[]string{"--mode", "space", "--pfcfs-delay", "1m"}, "--pfcfs-delay: applies only with --policy pfcfs"},
	} {
		var errb bytes.Buffer
		code, _ := sweepCLI(context.Background(), &errb, append([]string{"sim", "sweep", "--jobs", "5"}, tc.args...)...)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
