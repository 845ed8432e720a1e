package plot

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// rows makes a synthetic sweep: every combination, metrics made up from
// the point so the tests can predict the plotted values.
func rows(modes []sharing.Mode, mpls []int, slicesMS []int, loads []float64, mems []int64, seeds []uint64) []sweep.Row {
	var out []sweep.Row
	spec := sweep.Spec{Modes: modes, MPLs: mpls, Loads: loads, Workloads: []string{"w3"}, MemMeans: mems, Jobs: 10, Seeds: seeds, Policy: gang.EASY}
	for _, s := range slicesMS {
		spec.Slices = append(spec.Slices, time.Duration(s)*time.Millisecond)
	}
	for i, p := range sweep.Expand(spec) {
		r := sweep.Row{Index: i, Point: p, SliceText: p.Slice.String(), Simulated: p.Jobs}
		r.MeanResponse = 100*p.Load + float64(p.MPL) + p.Slice.Seconds() + float64(p.Seed)
		r.MeanWait = r.MeanResponse / 2
		r.MeanExecSlowdown = 1 + p.Load
		r.ProcessorUtil = p.Load / 2
		out = append(out, r)
	}
	return out
}

func names(figs []Figure) []string {
	var out []string
	for _, f := range figs {
		out = append(out, f.Name)
	}
	return out
}

func TestFiguresOfAFullSweep(t *testing.T) {
	figs, skips := Figures(rows(jss.Modes(), []int{1, 2}, []int{10, 50}, []float64{0.4, 0.8}, []int64{0}, []uint64{1}))
	if len(skips) != 0 {
		t.Errorf("skips %+v", skips)
	}
	want := []string{"response_vs_slice_w3_load0.4", "response_vs_slice_w3_load0.8"}
	for _, mpl := range []string{"1", "2"} {
		for _, s := range []string{"10", "50"} {
			for _, m := range []string{"response", "wait", "exec_slowdown", "processor_util"} {
				want = append(want, m+"_vs_load_w3_mpl"+mpl+"_slice"+s+"ms")
			}
		}
	}
	if got := names(figs); !slices.Equal(got, want) {
		t.Errorf("figures\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range figs {
		if f.Title == "" || f.chart.xLabel == "" || f.chart.yLabel == "" || !strings.Contains(f.chart.yLabel+f.chart.xLabel, "(") && !strings.Contains(f.Name, "slowdown") {
			t.Errorf("%s: title %q, axes %q, %q", f.Name, f.Title, f.chart.xLabel, f.chart.yLabel)
		}
	}
}

func TestSliceFigureLinesAndBaseline(t *testing.T) {
	figs, _ := Figures(rows(jss.Modes(), []int{1, 3}, []int{5, 10, 100}, []float64{0.5}, []int64{0}, []uint64{1}))
	f := figs[0]
	if f.Name != "response_vs_slice_w3_load0.5" || !f.chart.logX || f.chart.xLabel != "time slice δ (ms)" || f.chart.yLabel != "mean response time (s)" {
		t.Fatalf("figure %s: log %v, axes %q %q", f.Name, f.chart.logX, f.chart.xLabel, f.chart.yLabel)
	}
	var labels []string
	for _, s := range f.chart.series {
		labels = append(labels, s.label)
	}
	if want := []string{"gang MPL 1", "gang MPL 3", "bcs MPL 1", "bcs MPL 3", "space (backfilling)"}; !slices.Equal(labels, want) {
		t.Errorf("lines %v, want %v", labels, want)
	}
	bcs3 := f.chart.series[3]
	if want := []xy{{5, 50 + 3 + 0.005 + 1}, {10, 50 + 3 + 0.01 + 1}, {100, 50 + 3 + 0.1 + 1}}; !slices.Equal(bcs3.pts, want) {
		t.Errorf("bcs MPL 3 points %v, want %v", bcs3.pts, want)
	}
	space := f.chart.series[4]
	if !space.isRef || space.ref != 50+1+1 || space.color != -1 {
		t.Errorf("space baseline %+v", space)
	}
	if !slices.Equal(f.chart.xTicks, []float64{5, 10, 100}) {
		t.Errorf("ticks %v", f.chart.xTicks)
	}
	// Within 10×: a linear axis.
	figs, _ = Figures(rows([]sharing.Mode{sharing.Gang}, []int{2}, []int{10, 50}, []float64{0.5}, []int64{0}, []uint64{1}))
	if figs[0].chart.logX {
		t.Error("10-50 ms on a log scale")
	}
}

func TestLoadFigureLinesAndSeedMeans(t *testing.T) {
	figs, _ := Figures(rows(jss.Modes(), []int{3}, []int{50}, []float64{0.4, 0.8, 1.2}, []int64{0}, []uint64{1, 2}))
	want := []string{"response_vs_load_w3_mpl3", "wait_vs_load_w3_mpl3", "exec_slowdown_vs_load_w3_mpl3", "processor_util_vs_load_w3_mpl3"}
	if got := names(figs); !slices.Equal(got, want) {
		t.Fatalf("figures %v, want %v", got, want)
	}
	f := figs[0]
	if !strings.Contains(f.Title, "MPL 3, slice 50ms (mean of 2 seeds)") {
		t.Errorf("title %q", f.Title)
	}
	var labels []string
	for _, s := range f.chart.series {
		labels = append(labels, s.label)
	}
	if !slices.Equal(labels, []string{"space (backfilling)", "gang", "bcs"}) || !f.chart.series[0].dashed {
		t.Fatalf("lines %v", labels)
	}
	// space: MPL 1, no slice; seeds 1 and 2 average to 1.5.
	if want := []xy{{0.4, 40 + 1 + 1.5}, {0.8, 80 + 1 + 1.5}, {1.2, 120 + 1 + 1.5}}; !slices.Equal(f.chart.series[0].pts, want) {
		t.Errorf("space points %v, want %v", f.chart.series[0].pts, want)
	}
	if got := figs[3].chart.series[2].pts[1]; got != (xy{0.8, 40}) {
		t.Errorf("bcs utilization at 0.8: %v, want 40%%", got)
	}
}

func TestFiguresSkipDegenerateAxes(t *testing.T) {
	figs, skips := Figures(rows(jss.Modes(), []int{2}, []int{50}, []float64{0.8}, []int64{0}, []uint64{1}))
	if len(figs) != 0 {
		t.Errorf("drew %v", names(figs))
	}
	want := []Skip{
		{"response_vs_slice", []string{"response_vs_slice_w3_load0.8"}, "one time slice (50ms); a line needs at least 2"},
		{"response_vs_load", []string{"response_vs_load_w3_mpl2"}, "one load (0.8); a line needs at least 2"},
		{"wait_vs_load", []string{"wait_vs_load_w3_mpl2"}, "one load (0.8); a line needs at least 2"},
		{"exec_slowdown_vs_load", []string{"exec_slowdown_vs_load_w3_mpl2"}, "one load (0.8); a line needs at least 2"},
		{"processor_util_vs_load", []string{"processor_util_vs_load_w3_mpl2"}, "one load (0.8); a line needs at least 2"},
	}
	if len(skips) != len(want) {
		t.Fatalf("skips %+v", skips)
	}
	for i := range want {
		if skips[i].Kind != want[i].Kind || !slices.Equal(skips[i].Names, want[i].Names) || skips[i].Reason != want[i].Reason {
			t.Errorf("skip %d: %+v, want %+v", i, skips[i], want[i])
		}
	}

	// space alone: no slice figure; load figures with the space line only.
	figs, skips = Figures(rows([]sharing.Mode{sharing.Space}, nil, nil, []float64{0.4, 0.8}, []int64{256 << 20}, []uint64{1}))
	if got := names(figs); !slices.Equal(got, []string{"response_vs_load_w3_mem256MiB_mpl1", "wait_vs_load_w3_mem256MiB_mpl1", "exec_slowdown_vs_load_w3_mem256MiB_mpl1", "processor_util_vs_load_w3_mem256MiB_mpl1"}) {
		t.Errorf("space only: %v", got)
	}
	if len(skips) != 1 || skips[0].Reason != "no gang or bcs runs (space has no time slice)" || len(skips[0].Names) != 2 || skips[0].Names[1] != "response_vs_slice_w3_mem256MiB_load0.8" {
		t.Errorf("space only skips %+v", skips)
	}
	if !strings.Contains(figs[0].Title, "memory mean 256MiB") {
		t.Errorf("title %q", figs[0].Title)
	}
}

func TestMemorySizeNames(t *testing.T) {
	for b, want := range map[int64]string{128e6: "128MB", 1 << 30: "1GiB", 256 << 20: "256MiB", 1500: "1500B", 3e9: "3GB"} {
		if got := sweep.MemSize(b); got != want {
			t.Errorf("%d: %q, want %q", b, got, want)
		}
	}
}

func TestRenderPNGAndSVG(t *testing.T) {
	figs, _ := Figures(rows(jss.Modes(), []int{1, 2}, []int{5, 100}, []float64{0.4, 0.8}, []int64{0}, []uint64{1}))
	f := figs[0] // response vs slice, log x
	var p1, p2, s1, s2 bytes.Buffer
	for _, c := range []struct {
		b      *bytes.Buffer
		format string
	}{{&p1, "png"}, {&p2, "png"}, {&s1, "svg"}, {&s2, "svg"}} {
		if err := f.Render(c.b, c.format); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(p1.Bytes(), p2.Bytes()) || !bytes.Equal(s1.Bytes(), s2.Bytes()) {
		t.Error("rendering twice gave different bytes")
	}
	img, err := png.Decode(bytes.NewReader(p1.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 7*pngDPI || b.Dy() != 4.5*pngDPI {
		t.Errorf("PNG %v", b)
	}
	texts := svgTexts(t, s1.Bytes())
	for _, want := range []string{f.Title, "time slice δ (ms)", "mean response time (s)", "gang MPL 1", "bcs MPL 2", "space (backfilling)", "5", "100"} {
		if !slices.Contains(texts, want) {
			t.Errorf("SVG lacks the text %q; has %q", want, texts)
		}
	}
	if err := f.Render(io.Discard, "pdf"); err == nil || !strings.HasPrefix(err.Error(), "plot: unknown format") {
		t.Errorf("pdf: %v", err)
	}
}

// svgTexts parses an SVG document and returns its text elements.
func svgTexts(t *testing.T, data []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	root := ""
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(tok)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	return texts
}

func TestWriteFiles(t *testing.T) {
	figs, _ := Figures(rows([]sharing.Mode{sharing.Space, sharing.BCS}, []int{2}, []int{50}, []float64{0.4, 0.8}, []int64{0}, []uint64{1}))
	dir := t.TempDir()
	paths, err := WriteFiles(context.Background(), dir, figs[:1], []string{"svg", "png"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "response_vs_load_w3_mpl2.svg"), filepath.Join(dir, "response_vs_load_w3_mpl2.png")}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files in the directory (temporary files left?)", len(entries))
	}
	if _, err := WriteFiles(context.Background(), dir, figs, []string{"gif"}); err == nil {
		t.Error("gif accepted")
	}
}

// A cancelled context stops the writing between files: nothing more is
// written, and no temporary file is left.
func TestWriteFilesStopsWhenCancelled(t *testing.T) {
	figs, _ := Figures(rows([]sharing.Mode{sharing.Space, sharing.BCS}, []int{2}, []int{50}, []float64{0.4, 0.8}, []int64{0}, []uint64{1}))
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("SIGINT received")
	cancel(stop)
	paths, err := WriteFiles(ctx, dir, figs, []string{"svg"})
	if !errors.Is(err, stop) || len(paths) != 0 {
		t.Fatalf("%v, %v", paths, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 1400, "0 250 500 750 1000 1250"},
		{0, 1000, "0 200 400 600 800 1000"},
		{0.1, 1.6, "0.25 0.50 0.75 1.00 1.25 1.50"},
		{1, 2.3, "1.00 1.25 1.50 1.75 2.00 2.25"},
		{0, 0.09, "0.00 0.02 0.04 0.06 0.08"},
	} {
		var labels []string
		for _, tk := range (NiceTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tc.want {
			t.Errorf("%v-%v: %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// The x axis runs a little past the first and last points, so that their
// markers and tick labels are drawn whole.
func TestXAxisMargin(t *testing.T) {
	for _, sl := range [][]int{{5, 10, 100}, {10, 50}} {
		figs, _ := Figures(rows([]sharing.Mode{sharing.Gang}, []int{2}, sl, []float64{0.5}, []int64{0}, []uint64{1}))
		ch := figs[0].chart
		p, err := ch.build()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := ch.xRange()
		if !(p.X.Min < lo && p.X.Max > hi) || p.X.Min <= 0 {
			t.Errorf("slices %v (log %v): axis %v–%v, points %v–%v", sl, ch.logX, p.X.Min, p.X.Max, lo, hi)
		}
	}
}
