package plot

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/sharing"
)

func TestOptionsParse(t *testing.T) {
	formats, err := Options{In: "r.json", Out: "figs", Formats: "SVG, png,svg"}.Parse()
	if err != nil || !slices.Equal(formats, []string{"svg", "png"}) {
		t.Errorf("formats %v, %v", formats, err)
	}
	_, err = Options{Formats: "png,gif"}.Parse()
	var got []string
	for _, e := range fielderr.All(err) {
		got = append(got, e.Error())
	}
	want := []string{"In: required: the sweep's results file or directory", "Out: required: the directory for the figures",
		`Formats "gif": unknown format (valid: png, svg)`}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%q\nwant\n%q", got, want)
	}
}

func TestSkipString(t *testing.T) {
	one := Skip{Kind: "response_vs_slice", Names: []string{"response_vs_slice_w3_load0.8"}, Reason: "one time slice (50ms); a line needs at least 2"}
	if got := one.String(); got != "response_vs_slice_w3_load0.8: one time slice (50ms); a line needs at least 2" {
		t.Errorf("one: %q", got)
	}
	two := Skip{Kind: "response_vs_slice", Names: []string{"a", "b"}, Reason: "no gang or bcs runs"}
	if got := two.String(); got != "2 response_vs_slice figures (a, …): no gang or bcs runs" {
		t.Errorf("several: %q", got)
	}
}

// WriteFiles creates its directory.
func TestWriteFilesCreatesTheDirectory(t *testing.T) {
	figs, _ := Figures(rows([]sharing.Mode{sharing.Space, sharing.BCS}, []int{2}, []int{50}, []float64{0.4, 0.8}, []int64{0}, []uint64{1}))
	dir := filepath.Join(t.TempDir(), "new", "figs")
	paths, err := WriteFiles(context.Background(), dir, figs[:1], []string{"svg"})
	if err != nil || len(paths) != 1 {
		t.Fatalf("%v, %v", paths, err)
	}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Error(err)
	}
}
