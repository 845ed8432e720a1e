package jss

import (
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/internal/fielderr"
)

func fieldMessages(err error) []string {
	var out []string
	for _, e := range fielderr.All(err) {
		out = append(out, e.Error())
	}
	return out
}

func TestEngineSettingsValidateKeyedByField(t *testing.T) {
	good := PFCFSConfig{Scheduler: pfcfs.DefaultConfig(0)}
	if err := good.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	bad := PFCFSConfig{Scheduler: pfcfs.Config{WidePercent: 150, Delay: -time.Second, Switch: 2 * MaxDuration, Switches: MaxPFCFSSwitches + 1}, Penalty: -time.Second}
	want := []string{"Scheduler.WidePercent 150: must be a percentage in (0, 100]", "Scheduler.Delay -1s: must not be negative",
		"Scheduler.Switch 1752000h0m0s: must be at most 876000h", "Scheduler.Switches 1000001: must be at most 1000000", "Penalty -1s: must not be negative"}
	if got := fieldMessages(bad.Validate()); !slices.Equal(got, want) {
		t.Errorf("pfcfs: %q\nwant %q", got, want)
	}
	if err := DefaultImmediateService().Validate(); err != nil {
		t.Errorf("immediate service defaults: %v", err)
	}
	want = []string{"Quantum 0s: must be positive", "Memory -1: must not be negative", "MinRun -1ns: must not be negative"}
	if got := fieldMessages(ImmediateService{Memory: -1, MinRun: -1}.Validate()); !slices.Equal(got, want) {
		t.Errorf("immediate service: %q\nwant %q", got, want)
	}
	want = []string{"Interval -1ns: must not be negative", "FullAfter 1752000h0m0s: must be at most 876000h"}
	if got := fieldMessages(EQSpatial{Interval: -1, FullAfter: 2 * MaxDuration}.Validate()); !slices.Equal(got, want) {
		t.Errorf("eqspatial: %q\nwant %q", got, want)
	}
}
