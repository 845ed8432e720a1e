package measure

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/sharing"
)

func TestAdoptTakesTheClusterAndNamesConflicts(t *testing.T) {
	e := Existing{Mode: sharing.Gang, Processors: 8, Slice: 20 * time.Millisecond, MPL: 2, Policy: "fcfs", LocalProcessors: 8}
	none := func(string) bool { return false }
	o := RunOptions{Modes: []sharing.Mode{sharing.BCS, sharing.Space}, Nodes: 4, Slice: 50 * time.Millisecond, MPL: 3, Policy: "easy"}
	warning, err := e.Adopt(&o, none, 8)
	if err != nil || warning != "" {
		t.Fatalf("Adopt: %v, warning %q", err, warning)
	}
	if !slices.Equal(o.Modes, []sharing.Mode{sharing.Gang}) || o.Nodes != 8 || o.Slice != e.Slice || o.MPL != 2 || o.Policy != "fcfs" || o.Work != WorkCPU {
		t.Errorf("adopted %+v", o)
	}

	given := func(f string) bool { return f != "Policy" }
	o = RunOptions{Modes: []sharing.Mode{sharing.BCS}, Nodes: 8, Slice: 10 * time.Millisecond, MPL: 2, Work: WorkCPU}
	warning, err = e.Adopt(&o, given, 4)
	var got []string
	for _, fe := range fielderr.All(err) {
		got = append(got, fe.Error())
	}
	want := []string{"Modes bcs: the cluster at Addr runs gang", "Slice 10ms: the cluster at Addr runs 20ms",
		"Bandwidth: set on the cluster's agents, not by bench run, when Addr is given",
		"RealtimePriority: set on the cluster's agents, not by bench run, when Addr is given"}
	if !slices.Equal(got, want) || warning != "" {
		t.Errorf("errors %q\nwant %q (warning %q)", got, want, warning)
	}

	o = RunOptions{Work: WorkCPU}
	warning, err = e.Adopt(&o, func(f string) bool { return f == "Work" }, 4)
	if err != nil || !strings.Contains(warning, "has 8 processors on this host, which has 4 cores") || !strings.Contains(warning, "{Work} cpu given") {
		t.Errorf("--work cpu on too few cores: %v, warning %q", err, warning)
	}
	o = RunOptions{}
	if _, err = e.Adopt(&o, none, 4); len(fielderr.All(err)) != 1 || fielderr.All(err)[0].Field != "Work" {
		t.Errorf("CPU work on too few cores: %v", err)
	}
	if _, err = (Existing{Mode: sharing.Space}).Adopt(&o, none, 4); err == nil || !strings.Contains(err.Error(), "no processor") {
		t.Errorf("no processor up: %v", err)
	}
}

// ParseModes keeps a name it does not know, for Validate to refuse with
// the other problems; bench run's defaults are valid.
func TestParseModesLeavesUnknownNamesToValidate(t *testing.T) {
	modes, err := ParseModes("BCS, foo,local,gang,gang")
	if err != nil || !slices.Equal(modes, []sharing.Mode{sharing.BCS, "foo", sharing.Local, sharing.Gang, sharing.Gang}) {
		t.Fatalf("ParseModes = %q, %v", modes, err)
	}
	o := DefaultRunOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o.Modes = modes
	var got []string
	for _, fe := range fielderr.All(o.Validate()) {
		got = append(got, fe.Error())
	}
	want := []string{`Modes: unknown mode "foo" (valid: space, gang, bcs)`,
		"Modes: local is not a scheduling mode to compare (use space, gang, bcs)", "Modes: gang twice"}
	if !slices.Equal(got, want) {
		t.Errorf("errors %q\nwant %q", got, want)
	}
}

// The record of a run holds the run's settings, the default work, and the
// costs the simulated side charges: the profile's when there is one.
func TestRecordTakesTheResolvedSettingsAndTheProfilesCosts(t *testing.T) {
	o := DefaultRunOptions()
	o.Nodes = runtime.NumCPU() + 1
	rec := o.resolved().record(nil)
	if rec.Work != WorkWall || rec.Nodes != o.Nodes || rec.Cluster != "local" || rec.Profile != nil || rec.Machine != experiment.CostsOf(o.Machine) {
		t.Fatalf("record %+v", rec)
	}
	if r := o.resolved(); r.Machine.Processors != o.Nodes || r.Point.MPL != o.MPL || r.Point.Slice != o.Slice || r.Point.Policy != o.Policy {
		t.Fatalf("resolved machine %+v, point %+v", r.Machine, r.Point)
	}
	p := &profile.Profile{}
	p.Measured.SwitchCost, p.Measured.StrobeOverhead = 3*time.Millisecond, 7*time.Millisecond
	o.Profile = &experiment.ProfileRef{Path: "p.json", Profile: p}
	rec = o.resolved().record(nil)
	if rec.Profile != o.Profile || rec.Machine.ProcessSwitch != 3*time.Millisecond || rec.Machine.JobSwitch != 7*time.Millisecond {
		t.Fatalf("record with a profile: %+v", rec.Machine)
	}
}
