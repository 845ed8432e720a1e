package plot

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/cosched/cosched/internal/atomicfile"
)

// Figure size, and the PNG resolution.
const (
	width  = 7 * vg.Inch
	height = 4.5 * vg.Inch
	pngDPI = 144
)

// Formats lists the file formats Render writes.
func Formats() []string { return []string{"png", "svg"} }

type xy struct{ x, y float64 }

// chart is a figure's content, independent of the plotting library.
type chart struct {
	title, xLabel, yLabel string
	logX                  bool
	xTicks                []float64 // labelled x ticks (nil: automatic)
	yZero                 bool      // the y axis starts at 0
	series                []series
}

type series struct {
	label  string
	pts    []xy
	isRef  bool    // a horizontal reference line at ref across the x range
	ref    float64 //
	color  int     // palette index; -1 is black
	glyph  glyph
	dashed bool
	dotted bool
}

// glyph is the mark drawn at each point of a series.
type glyph int

const (
	glyphNone glyph = iota
	glyphRing
	glyphOpenSquare
	glyphDot
)

func (g glyph) drawer() draw.GlyphDrawer {
	switch g {
	case glyphRing:
		return draw.RingGlyph{}
	case glyphOpenSquare:
		return draw.SquareGlyph{}
	default:
		return draw.CircleGlyph{}
	}
}

// palette returns the colour of line i (-1: black), colour-blind safe
// (Okabe–Ito).
func palette(i int) color.Color {
	if i < 0 {
		return color.Black
	}
	colors := []color.RGBA{
		{0x00, 0x72, 0xb2, 0xff}, // blue
		{0xd5, 0x5e, 0x00, 0xff}, // vermillion
		{0x00, 0x9e, 0x73, 0xff}, // bluish green
		{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
		{0xe6, 0x9f, 0x00, 0xff}, // orange
		{0x56, 0xb4, 0xe9, 0xff}, // sky blue
		{0xf0, 0xe4, 0x42, 0xff}, // yellow
	}
	return colors[i%len(colors)]
}

// build makes a fresh gonum plot of the chart (drawing mutates a plot's
// axes, so every rendering gets its own).
func (ch chart) build() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = ch.title
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = ch.xLabel
	p.Y.Label.Text = ch.yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Add(plotter.NewGrid())

	xmin, xmax := ch.xRange()
	for _, s := range ch.series {
		var pts plotter.XYs
		if s.isRef {
			pts = plotter.XYs{{X: xmin, Y: s.ref}, {X: xmax, Y: s.ref}}
		} else {
			for _, q := range s.pts {
				pts = append(pts, plotter.XY{X: q.x, Y: q.y})
			}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plot: %s: %w", s.label, err)
		}
		line.Color = palette(s.color)
		line.Width = vg.Points(1.5)
		switch {
		case s.isRef || s.dashed:
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		case s.dotted:
			line.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2)}
		}
		p.Add(line)
		if s.glyph == glyphNone || s.isRef {
			p.Legend.Add(s.label, line)
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("plot: %s: %w", s.label, err)
		}
		sc.Color = palette(s.color)
		sc.Shape = s.glyph.drawer()
		sc.Radius = vg.Points(3)
		p.Add(sc)
		p.Legend.Add(s.label, line, sc)
	}
	// A margin either side, so that the markers and tick labels at the ends
	// of the x range are drawn whole rather than cut by the plot's edge.
	if xmax > xmin {
		if ch.logX && xmin > 0 {
			f := math.Pow(xmax/xmin, 0.03)
			p.X.Min, p.X.Max = xmin/f, xmax*f
		} else if !ch.logX {
			pad := 0.03 * (xmax - xmin)
			p.X.Min, p.X.Max = xmin-pad, xmax+pad
		}
	}
	if ch.logX {
		p.X.Scale = gplot.LogScale{}
	}
	if ch.xTicks != nil {
		var ticks gplot.ConstantTicks
		for _, x := range ch.xTicks {
			ticks = append(ticks, gplot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
		}
		p.X.Tick.Marker = ticks
	} else {
		p.X.Tick.Marker = NiceTicks{}
	}
	if ch.yZero && p.Y.Min > 0 {
		p.Y.Min = 0
	}
	p.Y.Tick.Marker = NiceTicks{}
	// Room above the highest point for the legend, about a line per entry.
	p.Y.Max += (0.05 + 0.06*float64(len(ch.series))) * (p.Y.Max - p.Y.Min)
	return p, nil
}

// NiceTicks labels about six ticks at round values (1, 2, 2.5 or 5 × 10^k
// apart), with minor ticks between them.
type NiceTicks struct{}

// Ticks implements gonum's plot.Ticker.
func (NiceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) {
		return gplot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, dec := 10*mag, 0
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	exp := int(math.Floor(math.Log10(step) + 1e-9))
	if r := step / math.Pow(10, float64(exp)); math.Abs(r-2.5) < 1e-9 {
		exp-- // 2.5 × 10^k needs one more decimal than 10^k
	}
	dec = max(0, -exp)
	var ticks []gplot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
		if minor := v + step/2; minor < hi {
			ticks = append(ticks, gplot.Tick{Value: minor})
		}
	}
	if minor := first - step/2; minor > lo {
		ticks = append(ticks, gplot.Tick{Value: minor})
	}
	return ticks
}

// xRange is the extent of the data series' x values.
func (ch chart) xRange() (lo, hi float64) {
	var xs []float64
	for _, s := range ch.series {
		for _, q := range s.pts {
			xs = append(xs, q.x)
		}
	}
	if len(xs) == 0 {
		return 0, 1
	}
	return slices.Min(xs), slices.Max(xs)
}

// Render writes the figure as PNG or SVG. The output depends only on the
// figure: no timestamps, the same bytes every time.
func (f Figure) Render(w io.Writer, format string) error {
	p, err := f.chart.build()
	if err != nil {
		return err
	}
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))}
	case "svg":
		c = vgsvg.New(width, height)
	default:
		return fmt.Errorf("plot: unknown format %q (valid: %s)", format, strings.Join(Formats(), ", "))
	}
	p.Draw(draw.New(c))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plot: %s.%s: %w", f.Name, format, err)
	}
	return nil
}

// WriteFiles renders every figure in every format into dir (created if
// needed) as NAME.FORMAT, each file written atomically, and returns the
// paths written. It stops between files, with ctx's cause, once ctx is
// done.
func WriteFiles(ctx context.Context, dir string, figs []Figure, formats []string) ([]string, error) {
	for _, format := range formats {
		if !slices.Contains(Formats(), format) {
			return nil, fmt.Errorf("plot: unknown format %q (valid: %s)", format, strings.Join(Formats(), ", "))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var paths []string
	for _, f := range figs {
		for _, format := range formats {
			if err := context.Cause(ctx); err != nil {
				return paths, fmt.Errorf("plot: stopped: %w", err)
			}
			var b bytes.Buffer
			if err := f.Render(&b, format); err != nil {
				return paths, err
			}
			path := filepath.Join(dir, f.Name+"."+format)
			if err := atomicfile.WriteFile(path, b.Bytes()); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
