package sweep

import (
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/sharing"
)

// defaultText is a good sweep as `cosched sim sweep` writes its defaults.
func defaultText() Text {
	return Text{Modes: "space,gang,bcs", MPLs: "3", Slices: "50ms", Loads: "0.8", Workloads: "w3", MemMeans: "0", Seeds: "1",
		Jobs: 100, Policy: "easy", Parallel: 2, Procs: 32, MemPerProc: "512MiB", MsgSize: "4KiB", Bandwidth: "100MB",
		JobSwitch: time.Millisecond, ProcessSwitch: 100 * time.Microsecond}
}

func TestTextParse(t *testing.T) {
	spec, shard, m, warnings, err := defaultText().Parse()
	if err != nil || len(warnings) != 0 || !shard.Whole() {
		t.Fatalf("Parse: %v, warnings %v, shard %v", err, warnings, shard)
	}
	if !slices.Equal(spec.Modes, []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS}) || spec.Jobs != 100 || m.Processors != 32 ||
		m.MemoryPerProc != 512<<20 || m.Network.MessageSize != 4096 || m.Network.Bandwidth != 100e6 {
		t.Errorf("spec %+v, machine %+v", spec, m)
	}
	tx := defaultText()
	tx.Modes = "bf"
	if _, _, _, warnings, err := tx.Parse(); err != nil || len(warnings) != 1 || warnings[0].Field != "Modes" {
		t.Errorf("former name: %v, warnings %v", err, warnings)
	}
}

func TestTextParseKeysEveryProblemByField(t *testing.T) {
	tx := defaultText()
	tx.Modes, tx.MemMeans, tx.Shard, tx.Slices, tx.JobSwitch, tx.Policy = "gang", "1GiB", "1/2", "1ms", 2*time.Millisecond, "pfcfs"
	_, _, _, _, err := tx.Parse()
	var got []string
	for _, e := range fielderr.All(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`MemMeans "1GiB": no room: more than MemPerProc 512MiB, a processor's memory`,
		"Policy pfcfs: space sharing, runs with Modes space only (got Modes gang)",
		"Out: required with Shard: shards are written to be merged",
		"Slices 1ms: must exceed JobSwitch 2ms, or gang-scheduled jobs make no progress",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%q\nwant\n%q", got, want)
	}
}
