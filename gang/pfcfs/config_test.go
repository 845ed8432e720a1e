package pfcfs_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/internal/fielderr"
)

// Validate's problems are keyed by field for callers that name the fields
// their own way (the simulator, the CLI's flags), upper bounds included.
func TestConfigValidateKeyedByField(t *testing.T) {
	bad := pfcfs.Config{Processors: 0, WidePercent: 150, Delay: 2 * pfcfs.MaxDuration, Switch: -time.Second, Switches: pfcfs.MaxSwitches + 1}
	err := bad.Validate()
	var got []string
	for _, e := range fielderr.All(err) {
		got = append(got, e.Error())
	}
	want := []string{"Processors 0: must be at least 1", "WidePercent 150: must be a percentage in (0, 100]",
		"Delay 1752000h0m0s: must be at most 876000h", "Switch -1s: must be positive", "Switches 1000001: must be at most 1000000"}
	if !slices.Equal(got, want) {
		t.Errorf("fields %q\nwant %q", got, want)
	}
	if !strings.Contains(err.Error(), "time between switches must be positive, got -1s") {
		t.Errorf("the core's words: %v", err)
	}
}
