package sweep

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/sharing"
)

// Spec is a sweep: lists of values for each dimension of the design space,
// and the settings every point shares.
type Spec struct {
	Modes     []sharing.Mode  `json:"modes"`
	MPLs      []int           `json:"mpls"`
	Slices    []time.Duration `json:"slices_ns"`
	Loads     []float64       `json:"loads"`
	Workloads []string        `json:"workloads"`
	MemMeans  []int64         `json:"mem_means"` // bytes per process; 0 = no memory constraint
	Jobs      int             `json:"jobs"`
	Seeds     []uint64        `json:"seeds"`
	Policy    gang.Policy     `json:"policy"`
}

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	timeShared := false
	if len(s.Modes) == 0 {
		add("no mode")
	}
	for _, m := range s.Modes {
		if jss.CheckMode(m) != nil {
			add("unknown mode %q (valid: space, gang, bcs)", m)
		} else if m != sharing.Space {
			timeShared = true
		}
	}
	if timeShared && len(s.MPLs) == 0 {
		add("no MPL (gang and bcs need at least one)")
	}
	for _, n := range s.MPLs {
		if n < 1 {
			add("MPL %d: must be at least 1", n)
		}
	}
	if timeShared && len(s.Slices) == 0 {
		add("no time slice (gang and bcs need at least one)")
	}
	for _, d := range s.Slices {
		if d <= 0 {
			add("slice %v: must be positive", d)
		}
	}
	if len(s.Loads) == 0 {
		add("no load")
	}
	for _, l := range s.Loads {
		if !(l > 0) || math.IsInf(l, 0) {
			add("load %v: must be positive and finite", l)
		}
	}
	if len(s.Workloads) == 0 {
		add("no workload")
	}
	for _, w := range s.Workloads {
		if _, err := bench.LookupWorkload(w); err != nil {
			add("%v", err)
		}
	}
	if len(s.MemMeans) == 0 {
		add("no memory mean (0 means no memory constraint)")
	}
	for _, m := range s.MemMeans {
		if m < 0 {
			add("memory mean %d: must not be negative", m)
		}
	}
	if s.Jobs < 1 {
		add("jobs %d: must be at least 1", s.Jobs)
	}
	if len(s.Seeds) == 0 {
		add("no seed")
	}
	// The registry says which engine runs the policy; a sweep point is a
	// homogeneous machine, so the matrix core's policies and pfcfs (space
	// sharing: mode space only) run, not those of hosts.
	switch info, err := jss.LookupPolicy(string(s.Policy)); {
	case err == nil && info.Engine == jss.EnginePFCFS:
		errs = append(errs, pfcfsModes(s.Modes)...)
	case err == nil && info.Engine == jss.EngineMatrix:
	default:
		_, err := gang.ParsePolicy(string(s.Policy))
		add("%v", err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("sweep: invalid spec: %w", errors.Join(errs...))
}

// Expand lists the points of a sweep: the Cartesian product of its lists,
// in this order, outermost first, each list in the order given with repeats
// dropped:
//
//	workload, memory mean, load, seed, mode, MPL, slice
//
// so the points of one workload are contiguous, and within one
// (workload, memory, load, seed) the modes follow one another.
//
// space sharing ignores MPL and slice, so it contributes one point
// per (workload, memory, load, seed), with MPL 1 and Slice 0, in its place in
// the mode order. Plots and tables show it as the baseline of every MPL and
// slice. A point's index in the returned slice identifies it in results
// files and shards (Row.Index).
//
// Expand does not validate; call Validate first.
func Expand(s Spec) []Point {
	s = s.normalized()
	var pts []Point
	for _, w := range s.Workloads {
		for _, mem := range s.MemMeans {
			for _, load := range s.Loads {
				for _, seed := range s.Seeds {
					base := Point{Load: load, Workload: w, MemMean: mem, Jobs: s.Jobs, Seed: seed, Policy: s.Policy}
					for _, mode := range s.Modes {
						p := base
						p.Mode = mode
						if mode == sharing.Space {
							p.MPL = 1
							pts = append(pts, p)
							continue
						}
						for _, mpl := range s.MPLs {
							for _, d := range s.Slices {
								p.MPL, p.Slice = mpl, d
								pts = append(pts, p)
							}
						}
					}
				}
			}
		}
	}
	return pts
}

// normalized returns the spec with repeats dropped from its lists (first
// occurrences kept, in order): the form results files record.
// MaxPoints bounds a sweep's grid: Expand holds every point in memory, and
// the product of a few long lists grows past any machine.
const MaxPoints = 1_000_000

// Bound is an upper bound on the number of points of s (the product of its
// lists' lengths, without repeats), saturating at MaxPoints+1.
func (s Spec) Bound() int {
	s = s.normalized()
	n := 1
	for _, l := range []int{len(s.Workloads), len(s.MemMeans), len(s.Loads), len(s.Seeds), len(s.Modes), len(s.MPLs), len(s.Slices)} {
		n *= max(l, 1)
		if n > MaxPoints {
			return MaxPoints + 1
		}
	}
	return n
}

func (s Spec) normalized() Spec {
	s.Modes, s.MPLs, s.Slices = dedup(s.Modes), dedup(s.MPLs), dedup(s.Slices)
	s.Loads, s.Workloads, s.MemMeans, s.Seeds = dedup(s.Loads), dedup(s.Workloads), dedup(s.MemMeans), dedup(s.Seeds)
	return s
}

// dedup returns the list without repeats, keeping first occurrences in order.
func dedup[T comparable](list []T) []T {
	out := make([]T, 0, len(list))
	seen := make(map[T]bool, len(list))
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
