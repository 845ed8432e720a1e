package main

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// The hand-worked case of jss/nowsim's TestHandWorkedSchedules as a trace:
// nodes of speeds 1, 2, 4; at time 0 J1 (2 tasks, t=8), J2 (3, 4), J3 (1,
// 6), J4 (1, 2). fifo: J1 [0,4], J2 [4,8], J3 [8,9.5], J4 [8,9]: makespan
// 9.5, mean flow (4+8+9.5+9)/4 = 7.625, max wait 8, mean wait (0+4+8+8)/4 =
// 5. fifo-bf backfills J4 at 0 ([0,2]): mean flow (4+8+9.5+2)/4 = 5.875,
// mean wait (0+4+8+0)/4 = 3. The 9-task job is dropped.
const nowTrace = `1 0 -1 8 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 0 -1 4 3 -1 -1 3 -1 -1 1 1 1 -1 -1 -1 -1 -1
3 0 -1 6 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4 0 -1 2 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
5 0 -1 2 9 -1 -1 9 -1 -1 1 1 1 -1 -1 -1 -1 -1
`

func TestSimNowHandWorkedTrace(t *testing.T) {
	code, out, errOut := cosched(t, nowTrace, "sim", "now", "--trace", "-", "--speeds", "1,2,4", "--policy", "fifo,fifo-bf", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"policy", "estimate", "seed", "jobs", "makespan_s", "mean_flow_s", "max_wait_s", "mean_wait_s"},
		{"fifo", "exact", "1", "4", "9.5", "7.625", "8", "5"},
		{"fifo-bf", "exact", "1", "4", "9.5", "5.875", "8", "3"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for i := range want {
		if strings.Join(rows[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	// The table names the dropped 9-task job.
	code, out, _ = cosched(t, nowTrace, "sim", "now", "--trace", "-", "--speeds", "1,2,4", "--policy", "fifo")
	if code != 0 || !strings.Contains(out, "4 jobs, 1 dropped") || !strings.Contains(out, "1 wider than the nodes") || !strings.Contains(out, "9.5s") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestSimNowGeneratedEveryPolicy(t *testing.T) {
	code, out, errOut := cosched(t, "", "sim", "now", "--jobs", "50", "--span", "2h", "--estimate", "fuzzy:0.5", "--seed", "1,2", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []struct {
		Policy   string  `json:"policy"`
		Seed     uint64  `json:"seed"`
		Jobs     int     `json:"jobs"`
		Makespan float64 `json:"makespan_s"`
		MeanFlow float64 `json:"mean_flow_s"`
		MaxWait  float64 `json:"max_wait_s"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 12 {
		t.Fatalf("%d rows, want 6 policies × 2 seeds", len(res))
	}
	for i, r := range res {
		wantPol := []string{"fifo", "firstfit", "random", "lpt", "spt", "fifo-bf"}[i%6]
		if r.Policy != wantPol || r.Seed != uint64(1+i/6) || r.Jobs != 50 || !(r.Makespan > 0) || r.MeanFlow > r.Makespan {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	code, out, _ = cosched(t, "", "sim", "now", "--jobs", "20", "--programs", "3", "--estimate", "learned:0.3")
	if code != 0 || !strings.Contains(out, "estimate  learned:0.3") || !strings.Contains(out, "fifo-bf") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestSimNowSpeedsFile(t *testing.T) {
	path := writeFile(t, "speeds.txt", "# a small network\n2x1\n2, 4 # fast ones\n4 4\n")
	code, out, errOut := cosched(t, "", "sim", "now", "--speeds-file", path, "--jobs", "10", "--policy", "fifo")
	if code != 0 || !strings.Contains(out, "nodes     6, speeds 2x1,1x2,3x4") {
		t.Errorf("exit %d: %s\n%s", code, errOut, out)
	}
}

func TestSimNowBadFlags(t *testing.T) {
	swf := writeFile(t, "t.swf", nowTrace)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--policy", "fifo,sjf"}, []string{`--policy: unknown policy "sjf"`}},
		{[]string{"--speeds", "1,0"}, []string{`--speeds "1,0"`, "positive"}},
		{[]string{"--speeds", "x2"}, []string{`--speeds "x2"`}},
		{[]string{"--estimate", "fuzzy"}, []string{`--estimate "fuzzy"`}},
		{[]string{"--estimate", "learned:2"}, []string{`--estimate "learned:2"`}},
		{[]string{"--seq-share", "0.8", "--large-share", "0.5"}, []string{"--seq-share 0.8 + --large-share 0.5: more than 1"}},
		{[]string{"--balanced-share", "-1"}, []string{"--balanced-share -1"}},
		{[]string{"--ptime", "2h-10m"}, []string{`--ptime "2h-10m"`}},
		{[]string{"--ptime-large", "soon"}, []string{`--ptime-large "soon"`}},
		{[]string{"--span", "-1s"}, []string{"--span -1s"}},
		{[]string{"--jobs", "0", "--format", "xml", "--seed", "one"}, []string{"3 problems", "--jobs 0", `--format "xml"`, `--seed "one"`}},
		{[]string{"--program-var", "1"}, []string{"--program-var 1"}},
		{[]string{"--speeds", "4x1"}, []string{"--seq-share/--large-share", "no small parallel size"}},
		{[]string{"--speeds-file", "speeds.txt", "--speeds", "1"}, []string{"--speeds-file: give --speeds or --speeds-file"}},
		{[]string{"--trace", swf, "--jobs", "5", "--span", "1h"}, []string{"--jobs: not used with --trace", "--span: not used with --trace"}},
		{[]string{"--speedz", "1"}, []string{"unknown flag: --speedz"}},
	} {
		code, _, errOut := cosched(t, "", append([]string{"sim", "now"}, c.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", c.args, code, errOut)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: %q does not mention %q", c.args, errOut, w)
			}
		}
	}
	if code, _, errOut := cosched(t, "", "sim", "now", "--trace", "/nonexistent.swf"); code != 1 || !strings.Contains(errOut, "--trace") {
		t.Errorf("missing trace: exit %d: %s", code, errOut)
	}
}
