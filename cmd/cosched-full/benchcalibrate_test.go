package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `cosched bench calibrate` end to end on a tiny cluster: the profile is
// written, loads back strictly (bench run accepts it), and its values are
// plausible; no agent is left. Speeds are not asserted.
func TestBenchCalibrate(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "profile.json")
	state := filepath.Join(dir, "state")
	cmd := coschedCmd("bench", "calibrate", "--nodes", "2", "--slice", "20ms", "--mpl", "2", "--work", "wall",
		"--barriers", "20", "--pings", "50", "--stream", "200", "--realtime-priority", "0", "--state-dir", state, "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("calibrate: %v\n%s", err, b)
	}
	for _, want := range []string{"relay latency", "bcs delivery delay", "profile written to " + out} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("output lacks %q:\n%s", want, b)
		}
	}
	// No agent of either cluster is left.
	files, _ := filepath.Glob(filepath.Join(state, "*", "cluster.json"))
	if len(files) != 2 {
		t.Fatalf("cluster records %v, want space and bcs", files)
	}
	for _, f := range files {
		rb, _ := os.ReadFile(f)
		var rec struct {
			Agents []struct{ PID int } `json:"agents"`
		}
		json.Unmarshal(rb, &rec)
		for _, a := range rec.Agents {
			if agentAlive(a.PID) {
				t.Errorf("agent pid %d of %s still alive", a.PID, f)
			}
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Version int `json:"version"`
		Host    struct {
			Cores     int    `json:"cores"`
			GoVersion string `json:"go_version"`
		} `json:"host"`
		Cluster struct {
			Nodes int `json:"nodes"`
		} `json:"cluster"`
		Measured struct {
			SwitchCost     int64   `json:"switch_cost_ns"`
			StrobeOverhead int64   `json:"strobe_overhead_ns"`
			Slices         int     `json:"slices"`
			RelayLatency   int64   `json:"relay_latency_ns"`
			RelayBandwidth float64 `json:"relay_bandwidth_bps"`
			Launch         int64   `json:"launch_ns"`
			ComputeScale   float64 `json:"compute_scale"`
			BCSDelivery    int64   `json:"bcs_delivery_ns"`
			BCSSoloPeriod  int64   `json:"bcs_solo_period_ns"`
		} `json:"measured"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	m := p.Measured
	const slice = 20e6
	if p.Version != 1 || p.Host.Cores < 1 || p.Host.GoVersion == "" || p.Cluster.Nodes != 2 ||
		m.SwitchCost <= 0 || m.StrobeOverhead <= 0 || m.Slices < 10 || m.RelayLatency <= 0 || !(m.RelayBandwidth > 0) ||
		m.Launch < 0 || m.ComputeScale < 1 || m.BCSDelivery <= 0 || m.BCSDelivery >= slice || m.BCSSoloPeriod <= 0 {
		t.Fatalf("implausible profile:\n%s", raw)
	}

	// A profile bench run cannot use is refused before any cluster starts,
	// naming the file and the field.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(strings.Replace(string(raw), `"compute_scale"`, `"compute_scal"`, 1)), 0o644)
	b, err = coschedCmd("bench", "run", "--profile", bad, "--out", filepath.Join(dir, "run")).CombinedOutput()
	if err == nil || !strings.Contains(string(b), bad) || !strings.Contains(string(b), `unknown field "compute_scal"`) {
		t.Fatalf("bench run with a bad profile: %v\n%s", err, b)
	}
}
