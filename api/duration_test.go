package api

import (
	"encoding/json"
	"testing"
	"time"
)

// The API takes a limit in the CLI's forms (Slurm's or Go's) or as a
// number of seconds, and refuses what would overflow.
func TestDurationJSON(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`"10"`:         10 * time.Minute,
		`"1:30"`:       90 * time.Second,
		`"1-00:00:00"`: 24 * time.Hour,
		`"90s"`:        90 * time.Second,
		`600`:          10 * time.Minute,
		`0.5`:          500 * time.Millisecond,
	} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.D != want {
			t.Errorf("%s: %v %v, want %v", in, d.D, err, want)
		}
	}
	for _, in := range []string{`"soon"`, `-1`, `1e300`, `"1:2:3:4"`, `true`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s accepted as %v", in, d.D)
		}
	}
}
