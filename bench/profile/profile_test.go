package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

func sample() *Profile {
	return &Profile{
		Version: Version,
		Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Host:    Host{Hostname: "h", Cores: 2, GoVersion: "go1.x", OS: "linux", Arch: "amd64"},
		Cluster: Cluster{Nodes: 4, Slice: 50 * time.Millisecond, MPL: 3, Work: "wall", RealtimePriority: 50, Bandwidth: 100e6},
		Measured: Measured{
			SwitchCost: 3 * time.Microsecond, SwitchCostP99: 10 * time.Microsecond,
			StrobeOverhead: 200 * time.Microsecond, StrobeIdle: 150 * time.Microsecond, Slices: 80,
			RelayLatency: 200 * time.Microsecond, RelayBandwidth: 30e6, MessageSize: 4096,
			Launch: 10 * time.Millisecond, ComputeScale: 1.03,
			BCSDelivery: 2 * time.Millisecond, BCSDeliveryP90: 4 * time.Millisecond, BCSSoloSync: true, BCSSoloPeriod: 50 * time.Millisecond,
		},
	}
}

func write(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRoundTrip(t *testing.T) {
	p := sample()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(write(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if *got != *p {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", got, p)
	}
	saved := filepath.Join(t.TempDir(), "saved.json")
	if err := p.Save(saved); err != nil {
		t.Fatal(err)
	}
	if sb, err := os.ReadFile(saved); err != nil || !bytes.Equal(sb, b) {
		t.Fatalf("Save wrote %q (%v), want Marshal's %q", sb, err, b)
	}
	for _, field := range []string{`"switch_cost_ns": 3000`, `"relay_bandwidth_bps": 30000000`, `"bcs_solo_sync": true`, `"version": 1`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON lacks %s:\n%s", field, b)
		}
	}
}

func TestLoadRejects(t *testing.T) {
	good, _ := sample().Marshal()
	for _, c := range []struct {
		name, json string
		want       []string
	}{
		{"unknown field", strings.Replace(string(good), `"launch_ns"`, `"lunch_ns"`, 1), []string{`unknown field "lunch_ns"`}},
		{"wrong type", strings.Replace(string(good), `"mpl": 3`, `"mpl": "3"`, 1), []string{"field cluster.mpl", "string"}},
		{"version", strings.Replace(string(good), `"version": 1`, `"version": 2`, 1), []string{"field version: 2, want 1"}},
		{"negative", strings.Replace(string(good), `"launch_ns": 10000000`, `"launch_ns": -5`, 1), []string{"field measured.launch_ns: -5"}},
		{"bandwidth and scale", strings.Replace(strings.Replace(string(good), `"relay_bandwidth_bps": 30000000`, `"relay_bandwidth_bps": 0`, 1),
			`"compute_scale": 1.03`, `"compute_scale": 0.5`, 1), []string{"field measured.relay_bandwidth_bps: 0", "field measured.compute_scale: 0.5"}},
		{"delivery", strings.Replace(string(good), `"bcs_delivery_ns": 2000000`, `"bcs_delivery_ns": 50000000`, 1), []string{"field measured.bcs_delivery_ns: 50ms is not less than the slice 50ms"}},
		{"trailing", string(good) + "{}", []string{"data after the JSON object"}},
		{"not json", "nope", []string{"not a profile"}},
	} {
		path := write(t, []byte(c.json))
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		for _, w := range append(c.want, "profile "+path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}

// A file far larger than a profile (/dev/zero) is refused after a
// bounded read.
func TestLoadBoundsItsRead(t *testing.T) {
	path := write(t, nil)
	if err := os.Truncate(path, 64<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "profile "+path+": more than 1024 KiB") {
		t.Errorf("64 MiB file: %v", err)
	}
}

func TestApply(t *testing.T) {
	p := sample()
	def := sweep.DefaultMachine()
	m := p.Apply(def)
	if m.JobSwitch != 200*time.Microsecond || m.ProcessSwitch != 3*time.Microsecond {
		t.Errorf("switches %v %v", m.JobSwitch, m.ProcessSwitch)
	}
	if m.Network != def.Network {
		t.Errorf("the nominal network changed: %+v (it picks iterations and h_max)", m.Network)
	}
	o := m.Overheads
	if o.Relay.Latency != 200*time.Microsecond || o.Relay.Bandwidth != 30e6 || o.Relay.MessageSize != 4096 {
		t.Errorf("relay %+v", o.Relay)
	}
	if o.Launch != 10*time.Millisecond || o.Delivery != 2*time.Millisecond || !o.SoloSync || o.ComputeScale != 1.03 {
		t.Errorf("overheads %+v", o)
	}
	if m.Processors != def.Processors || m.MeanRuntime != def.MeanRuntime {
		t.Error("Apply changed what the profile does not measure")
	}
	// The profiled machine simulates.
	pt := sweep.Point{Mode: "bcs", MPL: 3, Slice: 50 * time.Millisecond, Load: 0.8, Workload: "w3", Jobs: 30, Seed: 1, Policy: "easy"}
	m.Processors = 4
	m.MemoryPerProc = 0
	m.MeanRuntime = 5 * time.Second
	row, err := sweep.RunPoint(t.Context(), m, pt)
	if err != nil || row.Simulated != 30 {
		t.Fatalf("%+v %v", row, err)
	}
}

// ApplyFile applies the file's costs, and refuses a slice they leave no
// room in, naming the file.
func TestApplyFile(t *testing.T) {
	b, err := sample().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := write(t, b)
	spec := sweep.Spec{Modes: []sharing.Mode{sharing.BCS}, Slices: []time.Duration{50 * time.Millisecond}}
	m, err := ApplyFile(path, sweep.DefaultMachine(), spec)
	if err != nil || m.ProcessSwitch != 3*time.Microsecond || m.Overheads.Delivery != 2*time.Millisecond {
		t.Errorf("ApplyFile: %v, machine %+v", err, m)
	}
	spec.Slices = []time.Duration{2 * time.Millisecond}
	if _, err := ApplyFile(path, sweep.DefaultMachine(), spec); err == nil || !strings.Contains(err.Error(), path+": slice 2ms does not exceed") {
		t.Errorf("a slice within the delivery delay: %v", err)
	}
	if _, err := ApplyFile(filepath.Join(t.TempDir(), "missing.json"), sweep.DefaultMachine(), spec); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}
