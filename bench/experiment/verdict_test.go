package experiment

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// mode is a mode's result with the verdict's metrics set: measured
// response, slowdown and makespan, and simulated ones unless sim is nil.
func mode(m sharing.Mode, resp, slow, span float64, sim []float64) ModeResult {
	r := ModeResult{Mode: m, Summary: Summary{Jobs: 10, Completed: 10,
		Metrics: metrics.Summary{Response: metrics.Stat{Mean: resp}, Slowdown: metrics.Stat{Mean: slow}, Makespan: span}}}
	if sim != nil {
		r.Simulated = &sweep.Row{MeanResponse: sim[0], MeanSlowdown: sim[1], Makespan: sim[2]}
	}
	return r
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []ModeResult
		want  []string // Lines()
	}{{
		name: "the simulator ranks as measured",
		modes: []ModeResult{
			mode(sharing.BCS, 5.26, 1.89, 35.6, []float64{5.20, 1.84, 35.5}),
			mode(sharing.Gang, 4.61, 1.78, 31.9, []float64{4.37, 1.63, 29.9}),
			mode(sharing.Space, 4.94, 2.37, 29.3, []float64{4.70, 2.23, 27.5}),
		},
		want: []string{
			"verdict: gang wins mean response and mean slowdown, space wins makespan; simulated: the same winners",
			"  mean response  gang 4.61 s, space +7 %, bcs +14 % | simulated: gang 4.37 s, space +8 %, bcs +19 % (same ranking)",
			"  mean slowdown  gang 1.78, bcs +6 %, space +33 % | simulated: gang 1.63, bcs +13 %, space +37 % (same ranking)",
			"  makespan       space 29.3 s, gang +9 %, bcs +22 % | simulated: space 27.5 s, gang +9 %, bcs +29 % (same ranking)",
		},
	}, {
		name: "the simulator picks another winner, or another order",
		modes: []ModeResult{
			mode(sharing.BCS, 6, 2, 30, []float64{5, 2, 31}),
			mode(sharing.Gang, 5, 3, 20, []float64{6, 2.5, 20}),
			mode(sharing.Space, 7, 4, 25, []float64{7, 3, 22}),
		},
		want: []string{
			"verdict: gang wins mean response and makespan, bcs wins mean slowdown; simulated: the same winner on 2 of 3",
			"  mean response  gang 5 s, bcs +20 %, space +40 % | simulated: bcs 5 s, gang +20 %, space +40 % (another winner)",
			"  mean slowdown  bcs 2, gang +50 %, space +100 % | simulated: bcs 2, gang +25 %, space +50 % (same ranking)",
			"  makespan       gang 20 s, space +25 %, bcs +50 % | simulated: gang 20 s, space +10 %, bcs +55 % (same ranking)",
		},
	}, {
		name: "a failed mode is left out, an unsimulated one has no simulated ranking",
		modes: []ModeResult{
			mode(sharing.BCS, 1, 1, 1, nil),
			mode(sharing.Gang, 2, 2, 2, []float64{2, 2, 2}),
			func() ModeResult { m := mode(sharing.Space, 0.5, 0.5, 0.5, nil); m.Summary.Completed = 9; return m }(),
		},
		want: []string{
			"verdict: bcs wins mean response, mean slowdown and makespan; not simulated",
			"  mean response  bcs 1 s, gang +100 %",
			"  mean slowdown  bcs 1, gang +100 %",
			"  makespan       bcs 1 s, gang +100 %",
			"  (left out, not every job completed: space)",
		},
	}, {
		name: "the simulator disagrees on every metric",
		modes: []ModeResult{
			mode(sharing.Gang, 1, 1, 1, []float64{2, 2, 2}),
			mode(sharing.Space, 2, 2, 2, []float64{1, 1, 1}),
		},
		want: []string{
			"verdict: gang wins mean response, mean slowdown and makespan; simulated: another winner on every metric",
			"  mean response  gang 1 s, space +100 % | simulated: space 1 s, gang +100 % (another winner)",
			"  mean slowdown  gang 1, space +100 % | simulated: space 1, gang +100 % (another winner)",
			"  makespan       gang 1 s, space +100 % | simulated: space 1 s, gang +100 % (another winner)",
		},
	}, {
		name:  "one mode",
		modes: []ModeResult{mode(sharing.Gang, 2, 2, 2, []float64{2, 2, 2})},
		want: []string{
			"verdict: only gang ran; nothing to compare",
			"  mean response  gang 2 s | simulated: gang 2 s",
			"  mean slowdown  gang 2 | simulated: gang 2",
			"  makespan       gang 2 s | simulated: gang 2 s",
		},
	}, {
		name:  "no mode completed",
		modes: []ModeResult{func() ModeResult { m := mode(sharing.Gang, 2, 2, 2, nil); m.Error = "stalled"; return m }()},
		want:  []string{"verdict: none (no mode completed every job: gang)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.modes).Lines()
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestAgreement(t *testing.T) {
	v := func(ms ...sharing.Mode) []ModeValue {
		var out []ModeValue
		for i, m := range ms {
			out = append(out, ModeValue{m, float64(i)})
		}
		return out
	}
	for _, tc := range []struct {
		meas, sim []ModeValue
		want      Agreement
	}{
		{v(sharing.Gang, sharing.BCS, sharing.Space), v(sharing.Gang, sharing.BCS, sharing.Space), SameRanking},
		{v(sharing.Gang, sharing.BCS, sharing.Space), v(sharing.Gang, sharing.Space, sharing.BCS), SameWinner},
		{v(sharing.Gang, sharing.BCS, sharing.Space), v(sharing.BCS, sharing.Gang, sharing.Space), OtherWinner},
		{v(sharing.Gang, sharing.BCS), nil, NotSimulated},
		{v(sharing.Gang), v(sharing.Gang), OnlyOneMode},
	} {
		if got := (MetricVerdict{Measured: tc.meas, Simulated: tc.sim}).Agreement(); got != tc.want {
			t.Errorf("%v against %v: %v, want %v", tc.meas, tc.sim, got, tc.want)
		}
	}
}

func TestMargin(t *testing.T) {
	if got := Margin(4.61, 4.94); math.Abs(got-0.0716) > 1e-3 {
		t.Errorf("Margin(4.61, 4.94) = %v", got)
	}
	if got := Margin(0, 3); got != 0 {
		t.Errorf("Margin(0, 3) = %v, want 0", got)
	}
}

// figureRun is a run of two modes whose measured and simulated response
// times differ, with the longest response a simulated one.
func figureRun() *Run {
	s := time.Second
	run := &Run{Workload: "w3", Jobs: 3, WorkloadJobs: []Job{{Seq: 0, Submit: 0}, {Seq: 1, Submit: s}, {Seq: 2, Submit: 2 * s}}}
	for i, m := range []sharing.Mode{sharing.Gang, sharing.Space} {
		d := time.Duration(i+1) * s
		res := mode(m, 3, 2, 10, []float64{3, 2, 10})
		for k, j := range run.WorkloadJobs {
			res.Jobs = append(res.Jobs, Record{Job: j, State: api.Completed, Start: j.Submit, End: j.Submit + d + time.Duration(k)*s})
			res.SimJobs = append(res.SimJobs, SimJob{Seq: k, Start: j.Submit, End: j.Submit + 2*d + time.Duration(k)*s})
		}
		run.Modes = append(run.Modes, res)
	}
	return run
}

func TestResponseSeriesMeasuredAndSimulated(t *testing.T) {
	run := figureRun()
	series := responseSeries(run)
	var got []string
	for _, s := range series {
		kind := "measured"
		if s.Simulated {
			kind = "simulated"
		}
		got = append(got, string(s.Mode)+" "+kind)
	}
	if want := "gang measured,gang simulated,space measured,space simulated"; strings.Join(got, ",") != want {
		t.Fatalf("series %v, want %s", got, want)
	}
	// Space's simulated responses are 4, 5 and 6 s (submit + 2 × 2 s + k).
	if sim := series[3].Response; len(sim) != 3 || sim[0] != 4 || sim[2] != 6 {
		t.Errorf("space simulated responses %v, want [4 5 6]", sim)
	}
	xmax := cdfAxisMax(series)
	if xmax <= 6 {
		t.Errorf("axis ends at %v: the last step, at 6 s, would be on the border or clipped", xmax)
	}
	for _, s := range series {
		pts := cdfSteps(s.Response, xmax)
		last := pts[len(pts)-1]
		if last.X != xmax || last.Y != 1 {
			t.Errorf("%s: the staircase ends at %v, want (%v, 1)", s.Mode, last, xmax)
		}
		if pts[0].Y != 0 || pts[0].X != s.Response[0] {
			t.Errorf("%s: the staircase starts at %v", s.Mode, pts[0])
		}
	}
}

func TestWriteReportHasVerdictAndFigures(t *testing.T) {
	dir := t.TempDir()
	run := figureRun()
	path, err := WriteReport(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	title, rest, _ := strings.Cut(report, "\n\n")
	if !strings.HasPrefix(title, "# cosched bench run") || !strings.HasPrefix(rest, "**Verdict:**") {
		t.Errorf("the verdict does not follow the title:\n%s", report[:min(len(report), 400)])
	}
	if strings.Contains(report, "could not be drawn") {
		t.Errorf("a figure failed:\n%s", report)
	}
	for _, f := range []string{CompareFigure, ResponseCDFFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
			t.Errorf("%s: %v pixels", f, b)
		}
	}
	var table bytes.Buffer
	WriteTable(&table, run, false)
	for _, l := range strings.Split(table.String(), "\n") {
		if n := len([]rune(l)); n >= 150 {
			t.Errorf("a line of %d columns in the default table: %q", n, l)
		}
	}
	if !strings.Contains(table.String(), "verdict: ") {
		t.Errorf("no verdict after the table:\n%s", table.String())
	}
}
