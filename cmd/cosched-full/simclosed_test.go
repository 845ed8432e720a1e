package main

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cosched/cosched/jss/closed"
)

// A short run: 2 policies × 2 N, 3 replications of 300 completions.
var closedSmall = []string{"sim", "closed", "--procs", "4", "--jobs", "2,5", "--policy", "fcfs,ljfs", "--completions", "300", "--warmup", "30", "--replications", "3"}

func TestSimClosedCSV(t *testing.T) {
	code, out, errOut := cosched(t, "", append(closedSmall, "--format", "csv")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(recs[0], ",")
	if head != "policy,jobs,mean_response,mean_response_hw,mean_cycle,mean_cycle_hw,throughput,throughput_hw,cpu_util,cpu_util_hw,io_util,io_util_hw,d_rt,d_k,d_r,procs,dist,cv,service_mean,io_mean" {
		t.Errorf("header %s", head)
	}
	var keys []string
	for _, r := range recs[1:] {
		keys = append(keys, r[0]+"/"+r[1])
	}
	if got := strings.Join(keys, " "); got != "fcfs/2 fcfs/5 ljfs/2 ljfs/5" {
		t.Errorf("rows %s", got)
	}
}

func TestSimClosedJSONAndTable(t *testing.T) {
	code, out, errOut := cosched(t, "", append(closedSmall, "--format", "json", "--cv", "2", "--policy", "afcfs")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Experiment closed.Experiment
		Rows       []closed.Row
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Experiment.Service != (closed.Service{Dist: closed.BranchingErlang, Mean: 1, CV: 2}) || len(got.Rows) != 2 || got.Rows[0].Gains != nil {
		t.Errorf("json %+v", got)
	}
	for _, r := range got.Rows {
		if r.Policy != closed.AFCFS || !(r.Throughput.Mean > 0) || !(r.CPUUtil.Mean > 0 && r.CPUUtil.Mean < 1) {
			t.Errorf("row %+v", r)
		}
	}
	code, out, errOut = cosched(t, "", append(closedSmall, "--dist", "erlang2")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"4 processors", "erlang2 (m=1, C=0.707)", "mean_cycle", "D_R", "ljfs"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestSimClosedBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--cv", "0.5"}, []string{"--cv 0.5"}},
		{[]string{"--dist", "branching-erlang"}, []string{"--dist branching-erlang: needs --cv above 1"}},
		{[]string{"--dist", "exp", "--cv", "2"}, []string{"--cv 2: does not match --dist exp"}},
		{[]string{"--dist", "gamma"}, []string{`--dist "gamma"`}},
		{[]string{"--replications", "1"}, []string{"--replications 1"}},
		{[]string{"--jobs", "0,x", "--policy", "fcfs,sjf", "--format", "xml", "--procs", "0", "--io-mean", "0", "--service-mean", "-1", "--completions", "0", "--warmup", "-1", "--parallel", "0"},
			[]string{"10 problems", `--jobs "0"`, `--jobs "x"`, `--policy "sjf"`, `--format "xml"`, "--procs 0", "--io-mean 0", "--service-mean -1", "--completions 0", "--warmup -1", "--parallel 0"}},
		{[]string{"--jobs", ""}, []string{"--jobs: no value given"}},
		{[]string{"extra"}, []string{"unknown command"}},
	}
	for _, c := range cases {
		code, _, errOut := cosched(t, "", append([]string{"sim", "closed"}, c.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
	// --dist and --cv that agree are fine.
	if code, _, errOut := cosched(t, "", append(closedSmall, "--dist", "branching-erlang", "--cv", "3", "--jobs", "2")...); code != 0 {
		t.Errorf("agreeing --dist and --cv: exit %d: %s", code, errOut)
	}
}
