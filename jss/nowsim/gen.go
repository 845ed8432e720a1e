package nowsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cosched/cosched/internal/ctxslices"
	"github.com/cosched/cosched/internal/fielderr"
)

// Class is a job's size class.
type Class int

// The size classes.
const (
	Sequential    Class = iota // 1 task
	SmallParallel              // 2 … ⌈n/2⌉−1 tasks
	LargeParallel              // max(2, ⌈n/2⌉) … n tasks: at least half the nodes
)

func (c Class) String() string {
	return [...]string{"seq", "small", "large"}[c]
}

// Range is a closed range of processing times.
type Range struct{ Lo, Hi time.Duration }

func (r Range) String() string { return r.Lo.String() + "-" + r.Hi.String() }

// MaxJobs is the most jobs a generated workload may have: the jobs are held
// in memory (about 200 bytes each with the simulator's tables).
const MaxJobs = 5_000_000

// GenConfig configures the workload generator.
type GenConfig struct {
	Nodes int // machine size n
	Jobs  int
	// SeqShare and LargeShare are the shares of sequential and large
	// parallel jobs; the rest are small parallel. The counts are exact:
	// round(Jobs × share) each.
	SeqShare, LargeShare float64
	// BalancedShare is the share of parallel jobs that are load-balanced
	// (exactly round(parallel jobs × share) of them).
	BalancedShare float64
	// Span is the creation span: submit times are uniform in [0, Span]
	// (0: every job at time 0).
	Span time.Duration
	// PTime is the processing-time range of each class (by Class).
	PTime [3]Range
	// Programs, when positive, is the number of programs per class: program
	// p of class c has a base time b uniform in PTime[c], and its jobs take
	// b × (1 + U[−ProgramVar, ProgramVar]). Zero: every job draws its time
	// uniformly from PTime[c] and has no program.
	Programs   int
	ProgramVar float64
	Seed       uint64
}

// SizeRange returns the task counts of a class on n nodes; lo > hi when the
// class is empty.
func SizeRange(c Class, n int) (lo, hi int) {
	half := (n + 1) / 2
	switch c {
	case Sequential:
		return 1, 1
	case SmallParallel:
		return 2, half - 1
	}
	return max(2, half), n
}

// Counts returns the number of jobs of each class: round(Jobs × share) for
// sequential and large jobs, the rest small.
func (c GenConfig) Counts() [3]int {
	seq := int(math.Round(float64(c.Jobs) * c.SeqShare))
	large := int(math.Round(float64(c.Jobs) * c.LargeShare))
	large = min(large, c.Jobs-seq)
	return [3]int{seq, c.Jobs - seq - large, large}
}

// MaxSpan bounds the creation span (a century): beyond it, sums of times
// overflow time.Duration.
const MaxSpan = 100 * 365 * 24 * time.Hour

// Validate reports every problem at once, keyed by field (fielderr; the
// sizes of a class with no size on the nodes: SeqShare/LargeShare for the
// small jobs, LargeShare for the large). The sizes are checked only when
// everything else is right.
func (c GenConfig) Validate() error {
	var errs []error
	if c.Jobs < 1 || c.Jobs > MaxJobs {
		errs = append(errs, fielderr.New("Jobs", c.Jobs, "must be from 1 to %d", MaxJobs))
	}
	for _, sh := range []fielderr.Term{{Field: "SeqShare", Value: c.SeqShare}, {Field: "LargeShare", Value: c.LargeShare}, {Field: "BalancedShare", Value: c.BalancedShare}} {
		if v := sh.Value.(float64); !(v >= 0 && v <= 1) {
			errs = append(errs, fielderr.New(sh.Field, v, "must be in [0, 1]"))
		}
	}
	if c.SeqShare+c.LargeShare > 1+1e-9 {
		errs = append(errs, fielderr.Several(" + ", []fielderr.Term{{Field: "SeqShare", Value: c.SeqShare}, {Field: "LargeShare", Value: c.LargeShare}}, "more than 1"))
	}
	if c.Nodes < 1 {
		errs = append(errs, fielderr.New("Nodes", c.Nodes, "need at least 1"))
	}
	if c.Span < 0 || c.Span > MaxSpan {
		errs = append(errs, fielderr.New("Span", c.Span, "must be from 0s to %dh", MaxSpan/time.Hour))
	}
	if c.Programs < 0 || c.Programs > max(c.Jobs, 0) {
		errs = append(errs, fielderr.New("Programs", c.Programs, "must be from 0 to %d", max(c.Jobs, 0)))
	}
	if !(c.ProgramVar >= 0 && c.ProgramVar < 1) {
		errs = append(errs, fielderr.New("ProgramVar", c.ProgramVar, "must be in [0, 1)"))
	}
	if len(errs) == 0 {
		errs = c.sizeErrors()
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("nowsim: invalid workload: %w", errors.Join(errs...))
}

// sizeErrors reports the classes with jobs but no size on the nodes, and
// bad processing-time ranges.
func (c GenConfig) sizeErrors() []error {
	var errs []error
	for cl, n := range c.Counts() {
		if lo, hi := SizeRange(Class(cl), c.Nodes); n > 0 && lo > hi {
			shares := []fielderr.Term{{Field: "LargeShare"}}
			if Class(cl) == SmallParallel {
				shares = []fielderr.Term{{Field: "SeqShare"}, {Field: "LargeShare"}}
			}
			errs = append(errs, fielderr.Several("/", shares, "%d %s parallel jobs, but %d nodes have no %s parallel size (small: 2…⌈n/2⌉−1 tasks, large: ⌈n/2⌉…n)",
				n, Class(cl), c.Nodes, Class(cl)))
		}
		if r := c.PTime[cl]; n > 0 && (r.Lo < 0 || r.Hi < r.Lo) {
			errs = append(errs, fielderr.New("PTime", nil, "%s processing time %v: want 0 ≤ lo ≤ hi", Class(cl), r))
		}
	}
	return errs
}

// Generate returns a workload, IDs 1… in submit order. The same config
// gives the same jobs. Draw order (one PCG stream seeded by Seed): the
// shuffle of the class labels; the shuffle choosing balanced jobs; submit
// times; program base times (class by class); then per job its size, its
// program and its time.
func Generate(ctx context.Context, c GenConfig) ([]Job, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, streamGenerate))
	counts := c.Counts()
	classes := make([]Class, 0, c.Jobs)
	for cl, n := range counts {
		for range n {
			classes = append(classes, Class(cl))
		}
	}
	// Millions of jobs take seconds to shuffle and sort under load: each
	// step stops when ctx ends (the same draws as rng.Shuffle and the same
	// order as slices.Sort, so the same jobs).
	if err := ctxslices.Shuffle(ctx, rng, len(classes), func(i, j int) { classes[i], classes[j] = classes[j], classes[i] }); err != nil {
		return nil, fmt.Errorf("nowsim: generate: %w", context.Cause(ctx))
	}

	var parallel []int
	for i, cl := range classes {
		if cl != Sequential {
			parallel = append(parallel, i)
		}
	}
	if err := ctxslices.Shuffle(ctx, rng, len(parallel), func(i, j int) { parallel[i], parallel[j] = parallel[j], parallel[i] }); err != nil {
		return nil, fmt.Errorf("nowsim: generate: %w", context.Cause(ctx))
	}
	balanced := make([]bool, c.Jobs)
	for _, i := range parallel[:int(math.Round(float64(len(parallel))*c.BalancedShare))] {
		balanced[i] = true
	}

	submits := make([]time.Duration, c.Jobs)
	if c.Span > 0 {
		for i := range submits {
			submits[i] = uniform(rng, Range{0, c.Span}, time.Millisecond)
		}
		if err := ctxslices.SortFunc(ctx, submits, cmp.Compare[time.Duration]); err != nil {
			return nil, fmt.Errorf("nowsim: generate: %w", context.Cause(ctx))
		}
	}

	var bases [3][]time.Duration
	for cl := range bases {
		for range c.Programs {
			bases[cl] = append(bases[cl], uniform(rng, c.PTime[cl], time.Nanosecond))
		}
	}

	jobs := make([]Job, c.Jobs)
	done := ctx.Done()
	for i, cl := range classes {
		if i&0xffff == 0 {
			select {
			case <-done:
				return nil, fmt.Errorf("nowsim: generate: %w", context.Cause(ctx))
			default:
			}
		}
		lo, hi := SizeRange(cl, c.Nodes)
		j := Job{ID: int64(i + 1), Submit: submits[i], Tasks: lo + rng.IntN(hi-lo+1), Balanced: balanced[i]}
		if c.Programs > 0 {
			p := rng.IntN(c.Programs)
			j.Program = fmt.Sprintf("%s-%d", cl, p)
			f := 1 + c.ProgramVar*(2*rng.Float64()-1)
			j.Work = time.Duration(float64(bases[cl][p]) * f).Round(time.Millisecond)
		} else {
			j.Work = uniform(rng, c.PTime[cl], time.Millisecond)
		}
		jobs[i] = j
	}
	return jobs, nil
}

// uniform draws from r, rounded to a multiple of unit.
func uniform(rng *rand.Rand, r Range, unit time.Duration) time.Duration {
	return (r.Lo + time.Duration(rng.Float64()*float64(r.Hi-r.Lo))).Round(unit)
}
