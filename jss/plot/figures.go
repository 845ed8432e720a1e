package plot

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// Figure is one chart of a sweep, ready to render.
type Figure struct {
	// Name is the file name without extension, built from the figure's
	// kind and what it holds fixed, e.g. "response_vs_slice_w3_load0.8" or
	// "response_vs_load_w3_mpl3". See Figures for the rule.
	Name  string
	Title string
	chart chart
}

// Skip reports figures of one kind that were not drawn, and why.
type Skip struct {
	Kind   string   // e.g. "response_vs_slice"
	Names  []string // the figures not drawn, named as Figure.Name would be
	Reason string
}

// metric is a quantity plotted against load.
type metric struct {
	name  string // in file names
	title string
	axis  string
	zero  bool // start the y axis at 0
	value func(cell) float64
}

func loadMetrics() []metric {
	return []metric{
		{"response", "Mean response time", "mean response time (s)", true, func(c cell) float64 { return c.response }},
		{"wait", "Mean wait time", "mean wait time (s)", true, func(c cell) float64 { return c.wait }},
		{"exec_slowdown", "Mean execution-time slowdown", "execution time / dedicated runtime", false, func(c cell) float64 { return c.execSlowdown }},
		{"processor_util", "Processor utilization", "processor time computing (%)", true, func(c cell) float64 { return 100 * c.procUtil }},
	}
}

// Figures lays out the charts of a sweep's rows, averaging over seeds
// where a point was run with several:
//
//   - response_vs_slice_W[_memM]_loadL: mean response time against the time
//     slice (ms; log scale when the slices span more than 10×), one line per
//     (mode, MPL) of gang and bcs, space as a dashed horizontal reference line;
//     one figure per workload, memory mean and load.
//   - response_vs_load, wait_vs_load, exec_slowdown_vs_load and
//     processor_util_vs_load, each _W[_memM]_mplN[_sliceSms]: the metric
//     against the offered load, lines space (its MPL-1 runs), gang and bcs; one
//     figure per workload, memory mean, MPL and, when the rows have several
//     slices, slice.
//
// The _memM part appears only for a memory constraint (M as 128MB, 1GiB).
// A figure whose x axis would have fewer than 2 distinct values is not
// drawn; it is reported in the skips with the reason. The order of both
// results is deterministic.
func Figures(rows []sweep.Row) ([]Figure, []Skip) {
	cells, seeds := average(rows)
	var figs []Figure
	sk := skipper{}
	note := ""
	if seeds > 1 {
		note = fmt.Sprintf(" (mean of %d seeds)", seeds)
	}
	timeShared := filter(cells, func(c cell) bool { return c.mode != sharing.Space })
	manySlices := len(distinct(timeShared, func(c cell) time.Duration { return c.slice })) > 1
	for _, w := range distinct(cells, func(c cell) string { return c.workload }) {
		for _, mem := range distinct(cells, func(c cell) int64 { return c.mem }) {
			here := filter(cells, func(c cell) bool { return c.workload == w && c.mem == mem })
			if len(here) == 0 {
				continue
			}
			for _, load := range distinct(here, func(c cell) float64 { return c.load }) {
				f, reason := sliceFigure(here, w, mem, load, note)
				if reason != "" {
					sk.add("response_vs_slice", f.Name, reason)
				} else {
					figs = append(figs, f)
				}
			}
			ts := filter(here, func(c cell) bool { return c.mode != sharing.Space })
			mpls := distinct(ts, func(c cell) int { return c.mpl })
			if len(mpls) == 0 {
				mpls = []int{1} // space only
			}
			sliceList := distinct(ts, func(c cell) time.Duration { return c.slice })
			if len(sliceList) == 0 {
				sliceList = []time.Duration{0}
			}
			for _, mpl := range mpls {
				for _, d := range sliceList {
					for _, m := range loadMetrics() {
						f, reason := loadFigure(here, m, w, mem, mpl, d, manySlices, note)
						if reason != "" {
							sk.add(m.name+"_vs_load", f.Name, reason)
						} else {
							figs = append(figs, f)
						}
					}
				}
			}
		}
	}
	return figs, sk.skips
}

// skipper gathers skips by kind and reason, in order of appearance.
type skipper struct {
	skips []Skip
}

func (s *skipper) add(kind, name, reason string) {
	for i := range s.skips {
		if s.skips[i].Kind == kind && s.skips[i].Reason == reason {
			s.skips[i].Names = append(s.skips[i].Names, name)
			return
		}
	}
	s.skips = append(s.skips, Skip{Kind: kind, Names: []string{name}, Reason: reason})
}

// sliceFigure draws response time against slice for one workload, memory
// mean and load; a non-empty reason says why it is not drawn.
func sliceFigure(cells []cell, w string, mem int64, load float64, note string) (Figure, string) {
	name := "response_vs_slice_" + w + memPart(mem) + "_load" + fmtFloat(load)
	f := Figure{Name: name}
	at := filter(cells, func(c cell) bool { return c.load == load })
	ts := filter(at, func(c cell) bool { return c.mode != sharing.Space })
	xs := distinct(ts, func(c cell) time.Duration { return c.slice })
	switch {
	case len(ts) == 0:
		return f, "no gang or bcs runs (space has no time slice)"
	case len(xs) < 2:
		return f, fmt.Sprintf("one time slice (%v); a line needs at least 2", xs[0])
	}
	f.Title = "Mean response time vs time slice: " + w + memTitle(mem) + ", load " + fmtFloat(load) + note
	ch := chart{title: f.Title, xLabel: "time slice δ (ms)", yLabel: "mean response time (s)", yZero: true}
	for _, d := range xs {
		ch.xTicks = append(ch.xTicks, ms(d))
	}
	ch.logX = ms(xs[len(xs)-1]) > 10*ms(xs[0])
	type line struct {
		mode sharing.Mode
		mpl  int
	}
	var order []line
	pts := map[line][]xy{}
	for _, c := range ts { // sorted by mode, MPL, slice
		l := line{c.mode, c.mpl}
		if _, ok := pts[l]; !ok {
			order = append(order, l)
		}
		pts[l] = append(pts[l], xy{ms(c.slice), c.response})
	}
	// Colour by MPL; gang dotted with open squares, bcs solid with dots.
	mpls := distinct(ts, func(c cell) int { return c.mpl })
	for _, l := range order {
		s := series{label: fmt.Sprintf("%s MPL %d", l.mode, l.mpl), pts: pts[l], color: slices.Index(mpls, l.mpl), glyph: glyphDot}
		if l.mode == sharing.Gang {
			s.glyph, s.dotted = glyphOpenSquare, true
		}
		ch.series = append(ch.series, s)
	}
	for _, c := range at {
		if c.mode == sharing.Space {
			ch.series = append(ch.series, series{label: "space (backfilling)", ref: c.response, isRef: true, color: -1})
		}
	}
	f.chart = ch
	return f, ""
}

// loadFigure draws metric m against load for one workload, memory mean,
// MPL and slice: space, gang and bcs.
func loadFigure(cells []cell, m metric, w string, mem int64, mpl int, slice time.Duration, sliceInName bool, note string) (Figure, string) {
	name := m.name + "_vs_load_" + w + memPart(mem) + "_mpl" + strconv.Itoa(mpl)
	if sliceInName && slice > 0 {
		name += "_slice" + fmtFloat(ms(slice)) + "ms"
	}
	f := Figure{Name: name}
	in := filter(cells, func(c cell) bool {
		return c.mode == sharing.Space || c.mpl == mpl && c.slice == slice
	})
	xs := distinct(in, func(c cell) float64 { return c.load })
	if len(xs) < 2 {
		return f, fmt.Sprintf("one load (%s); a line needs at least 2", fmtFloat(xs[0]))
	}
	f.Title = m.title + " vs load: " + w + memTitle(mem)
	if slice > 0 {
		f.Title += fmt.Sprintf(", MPL %d, slice %v", mpl, slice)
	}
	f.Title += note
	ch := chart{title: f.Title, xLabel: "offered load", yLabel: m.axis, yZero: m.zero}
	for i, mode := range jss.Modes() {
		var pts []xy
		for _, c := range in {
			if c.mode == mode {
				pts = append(pts, xy{c.load, m.value(c)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		// The styles of the slice figures: space dashed black, gang dotted
		// with open squares, bcs solid with dots.
		s := series{label: string(mode), pts: pts, color: i - 1, glyph: glyphDot}
		switch mode {
		case sharing.Space:
			s.label, s.color, s.glyph, s.dashed = "space (backfilling)", -1, glyphRing, true
		case sharing.Gang:
			s.glyph, s.dotted = glyphOpenSquare, true
		}
		ch.series = append(ch.series, s)
	}
	f.chart = ch
	return f, ""
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// memPart is the file-name part for a memory mean: "" for none, else
// "_mem" and the size in the largest unit that divides it exactly.
func memPart(b int64) string {
	if b == 0 {
		return ""
	}
	return "_mem" + sweep.MemSize(b)
}

func memTitle(b int64) string {
	if b == 0 {
		return ""
	}
	return ", memory mean " + sweep.MemSize(b)
}
