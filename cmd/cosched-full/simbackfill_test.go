package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSimPriorityBackfillByName(t *testing.T) {
	path := writeFile(t, "small.swf", smallTrace)
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "easy,fcfs-bf,sjf-bf,priority-bf,lxfw-bf",
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
		code, _, errOut := cosched(t, "", append([]string{"sim"}, tc.args...)...)
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
	code, out, errOut := cosched(t, "", "sim", "sweep", "--mode", "bf,bgs", "--policy", "lxfw-bf", "--jobs", "30", "--load", "0.7", "--workload", "w3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "w3") != 2 {
		t.Errorf("want two rows:\n%s", out)
	}
}

// smallTrace under easy, by hand: job 1 (8 procs, 100 s) runs 0–100; jobs 2
// (4, 50 s) and 3 (4, 30 s) start at 100, job 4 (2, 10 s) when job 3 ends,
// at 130. Waits 0, 90, 80, 100. Runtime bins: [0,1m) holds jobs 2–4 (wait
// mean 90, max 100), [1m,10m) job 1 (wait 0).
func TestSimByRuntimeBin(t *testing.T) {
	path := writeFile(t, "small.swf", smallTrace)
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--by-runtime-bin", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []struct {
		Bins []struct {
			Label string `json:"runtime"`
			Jobs  int    `json:"jobs"`
			Wait  struct {
				Mean float64 `json:"mean"`
				Max  float64 `json:"max"`
			} `json:"wait_s"`
		} `json:"by_runtime_bin"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Bins) != 5 {
		t.Fatalf("want one result with 5 bins: %s", out)
	}
	b := res[0].Bins
	if b[0].Label != "[0,1m)" || b[0].Jobs != 3 || b[0].Wait.Mean != 90 || b[0].Wait.Max != 100 {
		t.Errorf("bin 0: %+v", b[0])
	}
	if b[1].Label != "[1m,10m)" || b[1].Jobs != 1 || b[1].Wait.Max != 0 {
		t.Errorf("bin 1: %+v", b[1])
	}
	code, out, errOut = cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--by-runtime-bin")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"by runtime bin", "[0,1m)", "[1m,10m)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[10m,100m)") {
		t.Errorf("table shows an empty bin:\n%s", out)
	}
	code, out, errOut = cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--by-runtime-bin", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	header := strings.SplitN(out, "\n", 2)[0]
	for _, want := range []string{"runtime_0_1m_jobs", "runtime_0_1m_wait_s_p95", "runtime_1000m_inf_utilization"} {
		if !strings.Contains(header, want) {
			t.Errorf("CSV header lacks %q: %s", want, header)
		}
	}
}

func TestSimEstimateScenarios(t *testing.T) {
	path := writeFile(t, "small.swf", smallTrace)
	for _, e := range []string{"actual", "actual+20%", "abort"} {
		if code, _, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--estimate", e); code != 0 {
			t.Errorf("--estimate %s: exit %d: %s", e, code, errOut)
		}
	}
	code, _, errOut := cosched(t, "", "sim", "--estimate", "actual+x%")
	if code != 2 || !strings.Contains(errOut, `--estimate "actual+x%": want requested, exact (or actual), actual+K% (e.g. actual+20%) or abort`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
