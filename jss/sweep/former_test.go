package sweep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/sharing"
)

// A results file written when the simulator spelled its modes bf, bgs and
// bcs reads as today's file, with a warning per former name, and writes
// back in today's spelling.
func TestFormerModeNamesAreReadWithAWarning(t *testing.T) {
	s := smallSpec()
	s.Loads, s.MPLs, s.Slices = []float64{0.8}, []int{2}, []time.Duration{50 * ms}
	today, _ := files(t, execute(t, s, Shard{}, 2))
	former := bytes.ReplaceAll(today, []byte(`"space"`), []byte(`"bf"`))
	former = bytes.ReplaceAll(former, []byte(`"gang"`), []byte(`"bgs"`))
	if bytes.Equal(former, today) || bytes.Contains(former, []byte(`"space"`)) {
		t.Fatalf("no former names written:\n%s", former)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, former, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Spec.Modes, []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS}) || r.Rows[0].Mode != sharing.Space || r.Rows[1].Mode != sharing.Gang {
		t.Errorf("modes read: spec %v, rows %v %v", r.Spec.Modes, r.Rows[0].Mode, r.Rows[1].Mode)
	}
	if len(r.Warnings) != 2 || !strings.HasPrefix(r.Warnings[0], path+`: mode "bf" is the former name of space`) || !strings.HasPrefix(r.Warnings[1], path+`: mode "bgs" is the former name of gang`) {
		t.Errorf("warnings %q", r.Warnings)
	}
	again, _ := files(t, r)
	if !bytes.Equal(again, today) {
		t.Errorf("written back:\n%s\nwant:\n%s", again, today)
	}
	// Merged shards carry their parts' warnings.
	m, err := Merge([]Part{{Name: path, Results: r}})
	if err != nil || !slices.Equal(m.Warnings, r.Warnings) {
		t.Errorf("merged warnings %q, %v", m.Warnings, err)
	}
	// Today's files warn of nothing.
	if r, err := Decode(bytes.NewReader(today)); err != nil || len(r.Warnings) != 0 {
		t.Errorf("today's file: warnings %q, %v", r.Warnings, err)
	}
}
