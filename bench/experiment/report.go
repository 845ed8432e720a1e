package experiment

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/jss/plot"
	"github.com/cosched/cosched/sharing"
)

// Report files, in the run's directory.
const (
	ReportFile      = "report.md"
	CompareFigure   = "measured_vs_simulated.png"
	ResponseCDFFile = "response_cdf.png"
)

// WriteReport writes dir/report.md, a self-contained account of run for
// a reader (configuration, measured and simulated metrics per mode with
// the relative error, the agents' counters, the files), and its figures.
// It returns the report's path.
func WriteReport(dir string, run *Run) (string, error) {
	var figErrs []string
	if err := writeCompareFigure(filepath.Join(dir, CompareFigure), run); err != nil {
		figErrs = append(figErrs, err.Error())
	}
	if err := writeResponseCDF(filepath.Join(dir, ResponseCDFFile), run); err != nil {
		figErrs = append(figErrs, err.Error())
	}
	path := filepath.Join(dir, ReportFile)
	if err := atomicfile.WriteFile(path, []byte(reportMarkdown(run, figErrs))); err != nil {
		return "", fmt.Errorf("experiment: report: %w", err)
	}
	return path, nil
}

func reportMarkdown(run *Run, figErrs []string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if run.MPIPrograms != "" {
		p("# cosched bench run: %d jobs of %d MPI programs (%s)\n\n", run.Jobs, len(run.MPIModels), run.MPIPrograms)
	} else {
		p("# cosched bench run: %s, %d jobs, load %g\n\n", run.Workload, run.Jobs, run.Load)
	}
	v := Decide(run.Modes)
	if len(v.Metrics) > 0 {
		p("**Verdict:** %s.\n\n", v.Headline())
		for _, mv := range v.Metrics {
			p("- %s: %s\n", mv.Metric, mv.Text())
		}
		p("\n")
	}
	if len(v.LeftOut) > 0 {
		p("Left out of the verdict, not every job completed: %s.\n\n", modeList(v.LeftOut))
	}
	host, _ := os.Hostname()
	p("Run %s on %s (%d cores, %s, cosched %s).\n\n", run.Started.Format(time.RFC3339), host, runtime.NumCPU(), runtime.Version(), version())
	p("| setting | value |\n| --- | --- |\n")
	p("| cluster | %s |\n", run.Cluster)
	p("| processors | %d |\n", run.Nodes)
	p("| slice, MPL (gang, bcs) | %v, %d%s |\n", run.Slice, run.MPL, armsNote(run))
	p("| queue policy | %s |\n", run.Policy)
	if run.MPIPrograms == "" {
		p("| mean runtime at load 1 | %v |\n", run.MeanRuntime)
		p("| ranks' work | %s |\n", run.Work)
	} else {
		p("| workload | `%s`: every job submitted at once, run with `--mpi cosched` |\n", run.MPIPrograms)
	}
	p("| workload seed | %d |\n", run.Seed)
	c := run.Machine
	p("| simulated machine | job switch %v, process switch %v, %s messages at %.0f MB/s, latency %v |\n",
		c.JobSwitch, c.ProcessSwitch, sizeText(c.MessageSize), c.Bandwidth/1e6, c.Latency)
	if pr := run.Profile; pr != nil && pr.Profile != nil {
		m := pr.Measured
		p("| machine profile | `%s`, calibrated %s on %s: launch %v, BCS delivery delay %v, compute scale %.3f |\n",
			pr.Path, pr.Created.Format(time.RFC3339), pr.Host.Hostname, m.Launch, m.BCSDelivery, m.ComputeScale)
	} else {
		p("| machine profile | none: the simulator's default costs (`cosched bench calibrate` makes one) |\n")
	}
	p("\n")

	if run.MPIPrograms != "" {
		writeMPIModels(&b, run)
	}
	p("## Measured and simulated\n\n")
	p("The simulator runs the same jobs (arrivals, sizes, templates, compute-time draws) through the same scheduler core. ")
	p("Error is (simulated − measured) / measured.\n\n")
	p("| mode | metric | measured | simulated | error |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, m := range run.Modes {
		for _, cmp := range m.Compared() {
			p("| %s | %s | %s | %s | %s |\n", m.Name(), cmp.Metric, valueText(cmp.Measured, cmp.Unit), valueText(cmp.Simulated, cmp.Unit), errText(cmp.RelError()))
		}
	}
	p("\n![measured and simulated metrics per mode](%s)\n\n", CompareFigure)
	p("![response times, measured and simulated](%s)\n\n", ResponseCDFFile)
	for _, e := range figErrs {
		p("(A figure could not be drawn: %s.)\n\n", e)
	}

	p("## Each mode's run\n\n")
	p("| mode | completed | makespan | elapsed | host load | slot reuses | relay transfers | deferred | heartbeat waits | strobes lost |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, m := range run.Modes {
		n := m.Nodes
		p("| %s | %d/%d | %.1f s | %v | %.1f → %.1f | %d | %d | %d | %d | %d |\n", m.Name(), m.Summary.Completed, m.Summary.Jobs, m.Summary.Metrics.Makespan,
			m.Elapsed.Round(time.Second), m.HostLoad[0], m.HostLoad[1], n.SlotReuses, n.Transferred, n.Deferred, n.HeartbeatWaits, n.StrobesLost)
	}
	for _, m := range run.Modes {
		if m.Error != "" {
			p("\n**%s failed:** %s\n", m.Name(), m.Error)
		}
	}
	p("\n## Definitions\n\n")
	p("- Response = end − submit; wait = start − submit; execution slowdown = (end − start) / the job's dedicated runtime.\n")
	if run.MPIPrograms != "" {
		p("- An MPI program's ranks report no compute time: its processor utilization counts, for each completed job, the computation of its model (its calibrated run alone less the simulated network's share).\n")
	}
	p("- Processor utilization = the compute time the ranks report / (processors × (last end − first submit)); the simulator's is its programs' compute over the same span.\n")
	p("- Host load is this host's 1-minute load average as the mode started and ended, against its %d cores: a local cluster shares them with everything else.\n", runtime.NumCPU())
	p("- Measured times come from the controller's clock; every number above is computed from the per-job records in MODE/jobs.csv.\n\n")
	p("## Files\n\n")
	p("- `results.json`: the whole run (workload, per-job records, summaries, simulated rows); `results.csv`: a row per mode.\n")
	p("- `MODE/jobs.csv`: one line per job; `MODE/state/`: the agents' logs and rank output (local clusters).\n")
	return b.String()
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return s.Value[:12]
		}
	}
	return info.Main.Version
}

func sizeText(n int) string {
	if n%1024 == 0 && n > 0 {
		return fmt.Sprintf("%d KB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

func valueText(x float64, unit string) string {
	switch {
	case math.IsNaN(x):
		return "–"
	case unit == "s":
		return fmt.Sprintf("%.2f s", x)
	case unit == "%":
		return fmt.Sprintf("%.1f %%", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func errText(e float64) string {
	if math.IsNaN(e) {
		return "–"
	}
	return fmt.Sprintf("%+.1f %%", 100*e)
}

var (
	measuredColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	simulatedColor = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// writeCompareFigure draws one panel per compared metric: a measured
// and a simulated bar for each mode.
func writeCompareFigure(path string, run *Run) error {
	if len(run.Modes) == 0 {
		return fmt.Errorf("no mode was run")
	}
	names := make([]string, len(run.Modes))
	for i, m := range run.Modes {
		names[i] = m.Name()
	}
	const rows, cols = 2, 2
	panels := make([][]*gplot.Plot, rows)
	for i := range rows {
		panels[i] = make([]*gplot.Plot, cols)
	}
	for k := range rows * cols {
		p := gplot.New()
		var meas, sim plotter.Values
		var title string
		for _, m := range run.Modes {
			c := m.Compared()[k]
			title = c.Metric
			if c.Unit != "" {
				title += " (" + c.Unit + ")"
			}
			meas = append(meas, zeroIfNaN(c.Measured))
			sim = append(sim, zeroIfNaN(c.Simulated))
		}
		p.Title.Text = title
		w := vg.Points(22)
		if len(names) > 4 { // narrower bars, names slanted: they would overlap
			w = vg.Points(max(6, 88/float64(len(names))))
			p.X.Tick.Label.Rotation = math.Pi / 6
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
		}
		bm, err := plotter.NewBarChart(meas, w)
		if err != nil {
			return fmt.Errorf("%s: %w", title, err)
		}
		bs, err := plotter.NewBarChart(sim, w)
		if err != nil {
			return fmt.Errorf("%s: %w", title, err)
		}
		bm.Color, bm.LineStyle.Width = measuredColor, 0
		bs.Color, bs.LineStyle.Width = simulatedColor, 0
		bm.Offset, bs.Offset = -w/2, w/2
		grid := plotter.NewGrid()
		grid.Vertical.Width = 0 // a line through each pair of bars would split it
		p.Add(grid, bm, bs)
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
		p.Y.Min = 0
		p.Y.Max *= 1.45 // room for the legend
		p.Y.Tick.Marker = plot.NiceTicks{}
		p.Legend.Add("measured", bm)
		p.Legend.Add("simulated", bs)
		p.Legend.Top = true
		panels[k/cols][k%cols] = p
	}
	img := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 6.5*vg.Inch), vgimg.UseDPI(120))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := gplot.Align(panels, tiles, dc)
	for i := range rows {
		for j := range cols {
			panels[i][j].Draw(canvases[i][j])
		}
	}
	return writePNG(path, img)
}

// cdfSeries is one distribution of response times in the CDF figure.
type cdfSeries struct {
	Mode      sharing.Mode
	Simulated bool
	Response  []float64 // seconds, sorted
}

// responseSeries returns, for each mode in run order, its measured
// response times (completed jobs), then its simulated ones when the run
// has them.
func responseSeries(run *Run) []cdfSeries {
	var out []cdfSeries
	for _, m := range run.Modes {
		var meas []float64
		for _, r := range m.Jobs {
			if r.Completed() && r.End >= 0 {
				meas = append(meas, (r.End - r.Submit).Seconds())
			}
		}
		if len(meas) > 0 {
			slices.Sort(meas)
			out = append(out, cdfSeries{Mode: sharing.Mode(m.Name()), Response: meas})
		}
		var sim []float64
		for _, j := range m.SimJobs {
			if j.Seq >= 0 && j.Seq < len(run.WorkloadJobs) && j.End >= 0 {
				sim = append(sim, (j.End - run.WorkloadJobs[j.Seq].Submit).Seconds())
			}
		}
		if len(sim) > 0 {
			slices.Sort(sim)
			out = append(out, cdfSeries{Mode: sharing.Mode(m.Name()), Simulated: true, Response: sim})
		}
	}
	return out
}

// cdfAxisMax is where the CDF figure's x axis ends: past the longest
// response by a margin, so that the last step of every curve shows.
func cdfAxisMax(series []cdfSeries) float64 {
	hi := 0.0
	for _, s := range series {
		hi = max(hi, s.Response[len(s.Response)-1])
	}
	if hi <= 0 {
		return 1
	}
	return hi * 1.08
}

// cdfSteps is the staircase of the empirical CDF of sorted resp, from 0
// at the shortest response, continued at 1 to xmax.
func cdfSteps(resp []float64, xmax float64) plotter.XYs {
	n := float64(len(resp))
	pts := make(plotter.XYs, 0, 2*len(resp)+1)
	for k, x := range resp {
		pts = append(pts, plotter.XY{X: x, Y: float64(k) / n}, plotter.XY{X: x, Y: float64(k+1) / n})
	}
	return append(pts, plotter.XY{X: xmax, Y: 1})
}

// writeResponseCDF draws each mode's response times as a cumulative
// distribution: measured solid, simulated dashed, one colour per mode.
func writeResponseCDF(path string, run *Run) error {
	series := responseSeries(run)
	if len(series) == 0 {
		return fmt.Errorf("response CDF: no completed job")
	}
	p := gplot.New()
	p.Title.Text = "Response times: measured (solid) and simulated (dashed)"
	p.X.Label.Text = "response (s)"
	p.Y.Label.Text = "fraction of jobs"
	p.Add(plotter.NewGrid())
	xmax := cdfAxisMax(series)
	colour := map[sharing.Mode]color.Color{}
	for _, s := range series {
		if colour[s.Mode] == nil {
			colour[s.Mode] = modeColor(len(colour))
		}
		line, err := plotter.NewLine(cdfSteps(s.Response, xmax))
		if err != nil {
			return fmt.Errorf("response CDF: %w", err)
		}
		line.Color = colour[s.Mode]
		line.Width = vg.Points(1.5)
		label := string(s.Mode) + " measured"
		if s.Simulated {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			label = string(s.Mode) + " simulated"
		}
		p.Add(line)
		p.Legend.Add(label, line)
	}
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = 0, 1.02
	p.X.Tick.Marker = plot.NiceTicks{}
	p.Y.Tick.Marker = gplot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Millimeter*2, vg.Millimeter*2
	img := vgimg.NewWith(vgimg.UseWH(7*vg.Inch, 4.5*vg.Inch), vgimg.UseDPI(120))
	p.Draw(draw.New(img))
	return writePNG(path, img)
}

func modeColor(i int) color.Color {
	palette := []color.Color{measuredColor, simulatedColor, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}
	return palette[i%len(palette)]
}

func writePNG(path string, img *vgimg.Canvas) error {
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}

func zeroIfNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// armsNote lists the arms with a slice or MPL of their own.
func armsNote(run *Run) string {
	var own []string
	for _, m := range run.Modes {
		if m.Label != "" {
			own = append(own, fmt.Sprintf("%s: %v, %d", m.Label, m.Slice, m.MPL))
		}
	}
	if len(own) == 0 {
		return ""
	}
	return " (" + strings.Join(own, "; ") + ")"
}

// writeMPIModels is report.md's section on the MPI programs: each one's
// calibration run alone and the simulator's model of it.
func writeMPIModels(b *strings.Builder, run *Run) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## The MPI programs and their models\n\n")
	p("Each program ran alone, twice, on a space-shared cluster of the same agents (its calibration: the faster run is its runtime); the relays counted its traffic. ")
	p("The simulator runs each as the benchmark template below: its iterations from the counters, its grain what makes its dedicated run last the calibrated runtime (docs/mpi.md, \"Compare modes on your own MPI programs\").\n\n")
	p("| program | ranks | jobs | alone | messages | bytes | collectives | model ⟨g,v,comm,sync⟩ × iterations | simulated alone | why |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |\n")
	for _, m := range run.MPIModels {
		c := m.Calibration
		ded := time.Duration(0)
		for _, j := range run.WorkloadJobs {
			if j.Program == m.Name {
				ded = j.Dedicated
				break
			}
		}
		p("| %s | %d | %d | %.3f s | %d | %d | %d | %s × %d | %.3f s | %s |\n", m.Name, m.Ranks, m.Weight, c.Runtime.Seconds(), c.Sent, c.SentBytes,
			c.Collectives, m.Model.Template, m.Model.Iterations, ded.Seconds(), m.Model.Why)
	}
	p("\n")
}
