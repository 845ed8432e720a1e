package now

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// An Estimator supplies the processing-time estimates a site has: it is
// asked once per job, when the job is submitted, and told the normalized
// run time (Done.Normalized) of every job that ends. Estimators are not safe
// for concurrent use.
type Estimator interface {
	// Estimate returns the estimated processing time of a job of the given
	// program ("" when unknown) whose true processing time is t.
	Estimate(program string, t time.Duration) time.Duration
	// Observe records that a job of the program ran for the given
	// normalized run time.
	Observe(program string, normalized time.Duration)
}

// Exact estimates are the true processing time.
type Exact struct{}

// Estimate returns t.
func (Exact) Estimate(_ string, t time.Duration) time.Duration { return t }

// Observe does nothing.
func (Exact) Observe(string, time.Duration) {}

// Fuzzy estimates are off by a random factor f = 1 + U·P, U uniform in
// [0,1): the estimate is t·f or t/f with probability 1/2 each, so it lies
// in (t/(1+P), t(1+P)). For each job it draws U, then a second uniform that
// picks t·f when below 1/2.
type Fuzzy struct {
	P    float64 // maximum relative error p_err ≥ 0
	Rand *rand.Rand
}

// Estimate returns t·f or t/f.
func (f Fuzzy) Estimate(_ string, t time.Duration) time.Duration {
	factor := 1 + f.Rand.Float64()*f.P
	if f.Rand.Float64() < 0.5 {
		return time.Duration(math.Round(float64(t) * factor))
	}
	return time.Duration(math.Round(float64(t) / factor))
}

// Observe does nothing.
func (Fuzzy) Observe(string, time.Duration) {}

// Learned estimates are learned per program from finished jobs, as the
// WINNER resource manager does: an exponentially weighted moving average of
// normalized run times. With weight w, when a job of program p ends with
// normalized run time x:
//
//	e_p ← x                    at p's first observation
//	e_p ← w·x + (1 − w)·e_p    afterwards
//
// and the same update is applied to one average g over all programs. A job
// is estimated e_p if its program has been observed, else g if any job has
// ended, else Prior. Jobs with no program ("") only use g and Prior.
type Learned struct {
	w, prior float64
	g        float64
	seen     bool
	byProg   map[string]float64
}

// NewLearned returns a Learned estimator with weight w in (0, 1] and the
// estimate used before any job has ended.
func NewLearned(w float64, prior time.Duration) *Learned {
	return &Learned{w: w, prior: float64(prior), byProg: make(map[string]float64)}
}

// Estimate returns e_p, else g, else the prior.
func (l *Learned) Estimate(program string, _ time.Duration) time.Duration {
	e, ok := l.byProg[program]
	switch {
	case ok && program != "":
	case l.seen:
		e = l.g
	default:
		e = l.prior
	}
	return time.Duration(math.Round(e))
}

// Observe applies the EWMA update to the program's average and the global one.
func (l *Learned) Observe(program string, normalized time.Duration) {
	x := float64(normalized)
	if program != "" {
		if e, ok := l.byProg[program]; ok {
			l.byProg[program] = l.w*x + (1-l.w)*e
		} else {
			l.byProg[program] = x
		}
	}
	if l.seen {
		l.g = l.w*x + (1-l.w)*l.g
	} else {
		l.g, l.seen = x, true
	}
}

// EstimateMode names a kind of estimator.
type EstimateMode string

// The estimate modes.
const (
	EstimateExact   EstimateMode = "exact"
	EstimateFuzzy   EstimateMode = "fuzzy"
	EstimateLearned EstimateMode = "learned"
)

// EstimateSpec is a parsed estimate flag: exact, fuzzy:P or learned:W[:PRIOR].
type EstimateSpec struct {
	Mode EstimateMode
	// Param is p_err (fuzzy) or the weight w (learned).
	Param float64
	// Prior is the learned estimator's estimate before any job ended; zero
	// means the caller chooses.
	Prior time.Duration
}

func (e EstimateSpec) String() string {
	switch e.Mode {
	case EstimateFuzzy, EstimateLearned:
		s := string(e.Mode) + ":" + strconv.FormatFloat(e.Param, 'g', -1, 64)
		if e.Prior > 0 {
			s += ":" + e.Prior.String()
		}
		return s
	}
	return string(e.Mode)
}

// ParseEstimate parses "exact", "fuzzy:P" (P ≥ 0) or "learned:W[:PRIOR]"
// (0 < W ≤ 1, PRIOR a positive Go duration).
func ParseEstimate(s string) (EstimateSpec, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	bad := func(why string) (EstimateSpec, error) {
		return EstimateSpec{}, fmt.Errorf("now: estimate %q: %s (want exact, fuzzy:P or learned:W[:PRIOR])", s, why)
	}
	mode := EstimateMode(strings.ToLower(parts[0]))
	switch mode {
	case EstimateExact:
		if len(parts) != 1 {
			return bad("exact takes no parameter")
		}
		return EstimateSpec{Mode: mode}, nil
	case EstimateFuzzy:
		if len(parts) != 2 {
			return bad("fuzzy needs its maximum relative error, e.g. fuzzy:0.5")
		}
		p, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || !(p >= 0) || math.IsInf(p, 0) {
			return bad("the error must be a number ≥ 0")
		}
		return EstimateSpec{Mode: mode, Param: p}, nil
	case EstimateLearned:
		if len(parts) != 2 && len(parts) != 3 {
			return bad("learned needs its weight, e.g. learned:0.3")
		}
		w, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || !(w > 0 && w <= 1) {
			return bad("the weight must be in (0, 1]")
		}
		spec := EstimateSpec{Mode: mode, Param: w}
		if len(parts) == 3 {
			d, err := time.ParseDuration(parts[2])
			if err != nil || d <= 0 {
				return bad("the prior must be a positive duration such as 1h")
			}
			spec.Prior = d
		}
		return spec, nil
	}
	return bad("unknown mode")
}

// New returns a fresh estimator for the spec. r is used by fuzzy only;
// prior is the learned estimator's prior when the spec has none.
func (e EstimateSpec) New(r *rand.Rand, prior time.Duration) (Estimator, error) {
	switch e.Mode {
	case EstimateExact:
		return Exact{}, nil
	case EstimateFuzzy:
		if r == nil {
			return nil, fmt.Errorf("now: estimate %s needs a random source", e)
		}
		return Fuzzy{P: e.Param, Rand: r}, nil
	case EstimateLearned:
		if e.Prior > 0 {
			prior = e.Prior
		}
		return NewLearned(e.Param, prior), nil
	}
	return nil, fmt.Errorf("now: unknown estimate mode %q", e.Mode)
}
