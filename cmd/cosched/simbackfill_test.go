package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSimPriorityBackfillByName(t *testing.T) {
	path := writeFile(t, "small.swf", smallTrace)
	code, out, errOut := cli(t, "", "sim", "--trace", path, "--policy", "easy,fcfs-bf,sjf-bf,priority-bf,lxfw-bf",
		"--reservations", "2", "--reservations-mode", "fixed", "--weights", "ww=1,wx=5,wp=0.2,wm=0", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []struct {
		Policy  string `json:"policy"`
		Metrics struct {
			Jobs int `json:"jobs"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 {
		t.Fatalf("%d results, want 5", len(res))
	}
	for _, r := range res {
		if r.Metrics.Jobs != 4 {
			t.Errorf("%s: %d jobs simulated, want 4", r.Policy, r.Metrics.Jobs)
		}
	}
}

func TestSimPriorityBackfillBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--policy", "priority-bf", "--reservations", "0"}, []string{`--reservations "0": want a count of at least 1, or inf`}},
		{[]string{"--policy", "priority-bf", "--reservations-mode", "sticky"}, []string{`--reservations-mode "sticky": want dynamic or fixed`}},
		{[]string{"--policy", "priority-bf", "--weights", "ww=1,wq=2"}, []string{`--weights "ww=1,wq=2": unknown weight "wq"`}},
		{[]string{"--policy", "priority-bf", "--weights", "ww=x"}, []string{`--weights "ww=x": weight ww: "x" is not a finite number`}},
		{[]string{"--policy", "easy", "--reservations", "2"}, []string{"--reservations applies only to the priority-backfill policies"}},
		{[]string{"--policy", "sjf-bf", "--weights", "ww=1"}, []string{"--weights applies only to fcfs-bf, priority-bf and lxfw-bf"}},
		{[]string{"--policy", "easy", "--reservations-mode", "fixed", "--weights", "wx=1"}, []string{"2 problems", "--reservations-mode applies", "--weights applies"}},
	} {
		code, _, errOut := cli(t, "", append([]string{"sim"}, tc.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
}

// The sweep's --policy takes the presets by name (with their defaults).
func TestSweepPriorityBackfillByName(t *testing.T) {
	code, out, errOut := cli(t, "", "sim", "sweep", "--mode", "bf,bgs", "--policy", "lxfw-bf", "--jobs", "30", "--load", "0.7", "--workload", "w3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "w3") != 2 {
		t.Errorf("want two rows:\n%s", out)
	}
}
