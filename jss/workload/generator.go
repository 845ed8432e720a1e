package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/jss"
)

// MaxJobs is the most jobs one workload may have: about 1.3 GB of SWF.
// The generator streams, so the bound is on what a mistyped count writes
// to disk or runs for, not on memory.
const MaxJobs = 10_000_000

// Config describes a synthetic workload.
type Config struct {
	// Model gives the arrival processes, runtimes and sizes (e.g. Builtin()).
	Model Model
	// Processors is the machine size; sizes above it are excluded.
	Processors int
	// Jobs is how many jobs to generate.
	Jobs int
	// Load is the offered load, Σ size·runtime over processors·time
	// (0.1–1.6 typical; above 1 only time sharing keeps up).
	Load float64
	// MeanRuntime is the mean runtime at load 1.0; 0 keeps the model's own
	// time scale.
	MeanRuntime time.Duration
	// Templates are the benchmark templates jobs draw from uniformly (a
	// named workload's mix); empty leaves jobs without a template.
	Templates []bench.Template
	// MemoryMean is the mean memory per process in bytes; 0 sets no
	// memory requirement.
	MemoryMean int64
	// MemoryMax is a column's memory in bytes: no process needs more.
	// Required when MemoryMean > 0, and at least MemoryMean.
	MemoryMax int64
	// Seed selects the random sequence; equal configs give equal workloads.
	Seed uint64
}

// MaxLoad bounds an offered load: beyond it every generated job arrives at
// once and runtimes overflow.
const MaxLoad = 1000.0

// Validate reports every problem with the configuration at once, keyed by
// field (fielderr).
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, value any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, value, format, args...))
	}
	if err := c.Model.Validate(); err != nil {
		bad("Model", nil, "%v", err)
	}
	if c.Jobs < 1 || c.Jobs > MaxJobs {
		bad("Jobs", c.Jobs, "must be from 1 to %d", MaxJobs)
	}
	if !(c.Load > 0) || c.Load > MaxLoad {
		bad("Load", c.Load, "must be in (0, %v]", MaxLoad)
	}
	if c.Processors < 1 || c.Processors > gang.MaxProcessors {
		bad("Processors", c.Processors, "must be from 1 to %d", gang.MaxProcessors)
	} else if len(c.Model.Classes) > 0 && len(c.Model.onMachine(c.Processors).Classes) == 0 {
		bad("Processors", c.Processors, "no job size of the model fits the machine")
	}
	if c.MeanRuntime < 0 || c.MeanRuntime > jss.MaxDuration {
		bad("MeanRuntime", c.MeanRuntime, "must be from 0s to %dh", jss.MaxDuration/time.Hour)
	}
	for i, t := range c.Templates {
		if err := t.Validate(); err != nil {
			bad(fmt.Sprintf("Templates[%d]", i), nil, "%v", err)
		}
	}
	if c.MemoryMean < 0 {
		bad("MemoryMean", c.MemoryMean, "must not be negative (0 for no memory requirement)")
	}
	if c.MemoryMax < 0 {
		bad("MemoryMax", c.MemoryMax, "must not be negative")
	}
	if c.MemoryMean > 0 && c.MemoryMax < c.MemoryMean {
		bad("MemoryMax", c.MemoryMax, "must be at least MemoryMean (%d) when MemoryMean is set: a column must have room for a typical process", c.MemoryMean)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workload: config: %w", err)
	}
	return nil
}

// stream is one class's renewal process of arrivals.
type stream struct {
	class Class     // restricted to the machine
	cum   []float64 // cumulative size probabilities
	next  float64   // next arrival, model seconds
}

// Generator delivers a synthetic workload as a jss.Source.
//
// Arrivals: each class of the model that fits the machine is an
// independent renewal process with its interarrival distribution, the
// first arrival one interarrival after time 0; the workload is their
// superposition in time order (ties go to the smaller class). A job's size
// is drawn from its class's empirical sizes, those above the machine
// excluded and the rest renormalised; a class with none left is dropped.
//
// Time scale: if MeanRuntime > 0, every time (interarrivals and runtimes)
// is multiplied by one factor τ chosen so that the mean runtime at load 1.0
// equals MeanRuntime. A common factor leaves the offered load unchanged.
//
// Load: runtimes are then multiplied by Load/L0, where L0 is the model's
// OfferedLoad on the machine, so the expected offered load is Load: the
// base workload is normalised to offered load 1 and Load multiplies its
// runtimes, leaving arrivals alone. With MeanRuntime set, the mean runtime
// is thus MeanRuntime·Load.
//
// Jobs: number 1…Jobs, submit and runtime rounded to the nanosecond, a
// runtime of at least 1 ms, an exact estimate (Estimate = Runtime), no
// user, a template drawn uniformly from Config.Templates (its String form)
// and, when MemoryMean > 0, a memory per process drawn from an exponential
// of mean MemoryMean redrawn while above MemoryMax (a truncated
// exponential, drawn by inversion in one step; its mean is below
// MemoryMean), rounded up to whole KiB but never above MemoryMax.
//
// The random sequence is a PCG seeded from Config.Seed and nothing else:
// equal configs give equal job sequences. A Generator is not safe for
// concurrent use.
type Generator struct {
	cfg        Config
	rng        *rand.Rand
	streams    []stream
	timeScale  float64 // τ: model seconds → workload seconds
	runScale   float64 // τ·Load/L0, for runtimes
	memTrunc   float64 // 1 − e^(−MemoryMax/MemoryMean)
	templates  []string
	n          int
	lastSubmit time.Duration
}

// NewGenerator validates c and returns a Generator for it.
func NewGenerator(c Config) (*Generator, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := c.Model.onMachine(c.Processors)
	l0 := m.OfferedLoad(c.Processors)
	if !(l0 > 0) || math.IsInf(l0, 0) {
		return nil, fmt.Errorf("workload: model offers load %v on %d processors: cannot scale it to %v", l0, c.Processors, c.Load)
	}
	g := &Generator{
		cfg:       c,
		rng:       rand.New(rand.NewPCG(c.Seed, 0x636f7363686564)), // "cosched"
		timeScale: 1,
	}
	if c.MeanRuntime > 0 {
		// At load 1 runtimes are scaled by τ/L0, so τ = MeanRuntime·L0/E[run].
		g.timeScale = c.MeanRuntime.Seconds() * l0 / m.MeanRuntime()
	}
	g.runScale = g.timeScale * c.Load / l0
	if c.MemoryMean > 0 {
		g.memTrunc = -math.Expm1(-float64(c.MemoryMax) / float64(c.MemoryMean))
	}
	for _, t := range c.Templates {
		g.templates = append(g.templates, t.String())
	}
	for _, cl := range m.Classes {
		s := stream{class: cl}
		var acc float64
		for _, sp := range cl.Sizes {
			acc += sp.Prob
			s.cum = append(s.cum, acc)
		}
		s.next = cl.Interarrival.Sample(g.rng)
		g.streams = append(g.streams, s)
	}
	return g, nil
}

// maxSeconds is the longest time a Duration holds, in seconds.
const maxSeconds = float64(math.MaxInt64) / float64(time.Second)

func duration(seconds float64) time.Duration {
	if seconds >= maxSeconds {
		return math.MaxInt64 // a tail draw beyond 292 years: saturate, don't wrap
	}
	return time.Duration(math.Round(seconds * float64(time.Second)))
}

// Next implements jss.Source: the next job in submit order, io.EOF after
// Config.Jobs jobs.
func (g *Generator) Next() (jss.Job, error) {
	if g.n >= g.cfg.Jobs {
		return jss.Job{}, io.EOF
	}
	g.n++
	si := 0
	for i := 1; i < len(g.streams); i++ {
		if g.streams[i].next < g.streams[si].next {
			si = i
		}
	}
	s := &g.streams[si]
	submit := duration(s.next * g.timeScale)
	if submit < g.lastSubmit {
		submit = g.lastSubmit // rounding never reorders, but saturation could
	}
	g.lastSubmit = submit

	u := g.rng.Float64() * s.cum[len(s.cum)-1]
	k := 0
	for k < len(s.cum)-1 && u >= s.cum[k] {
		k++
	}
	size := s.class.Sizes[k].Size
	runtime := max(duration(s.class.Runtime.Sample(g.rng)*g.runScale), time.Millisecond)
	var tpl string
	if len(g.templates) > 0 {
		tpl = g.templates[g.rng.IntN(len(g.templates))]
	}
	var mem int64
	if g.cfg.MemoryMean > 0 {
		// Inversion of the exponential truncated at MemoryMax: the same
		// distribution as redrawing while above it, in one draw.
		x := -float64(g.cfg.MemoryMean) * math.Log1p(-g.rng.Float64()*g.memTrunc)
		mem = g.roundMemory(x)
	}
	s.next += s.class.Interarrival.Sample(g.rng)

	return jss.Job{
		Job: gang.Job{
			Submit:     submit,
			Processors: size,
			Estimate:   runtime,
			Memory:     mem,
			Template:   tpl,
		},
		Number:  int64(g.n),
		Runtime: runtime,
	}, nil
}

// roundMemory rounds a memory draw up to whole KiB, as SWF records memory
// in KB, without exceeding MemoryMax.
func (g *Generator) roundMemory(x float64) int64 {
	const kib = 1024
	mem := int64(math.Ceil(x/kib)) * kib
	if mem < kib {
		mem = kib
	}
	if mem > g.cfg.MemoryMax {
		mem = g.cfg.MemoryMax / kib * kib
		if mem == 0 { // a column of less than 1 KiB
			mem = g.cfg.MemoryMax
		}
	}
	return mem
}

// TimeScale returns τ, the factor applied to every model time.
func (g *Generator) TimeScale() float64 { return g.timeScale }

// RuntimeScale returns the factor applied to the model's runtimes: τ·Load/L0.
func (g *Generator) RuntimeScale() float64 { return g.runScale }

var _ jss.Source = (*Generator)(nil)
