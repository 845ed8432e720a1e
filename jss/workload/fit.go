package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/swf"
)

// MaxOrder is the highest Erlang order FitHyperErlang tries, and the order
// of its fallback for data with no spread.
const MaxOrder = 64

// ErrAllZero reports samples that are all zero: there is no positive mean
// to fit (a rate would be infinite).
var ErrAllZero = errors.New("every sample is zero")

// FitHyperErlang fits a two-branch hyper-Erlang of common order to samples
// by matching their first three moments, taking the lowest order n in
// 1…MaxOrder for which a fit exists (as Jann et al. do).
//
// For an order n the stage means a_i = 1/λ_i form a two-point distribution
// with weights p, 1−p whose moments are M1 = E[X]/n, M2 = E[X²]/(n(n+1))
// and M3 = E[X³]/(n(n+1)(n+2)); its points are the roots of x² − s·x + q
// with s = (M3 − M1·M2)/(M2 − M1²) and q = s·M1 − M2, and
// p = (a2 − M1)/(a2 − a1). Order n is feasible when M2 > M1² (the squared
// coefficient of variation exceeds 1/n), the roots are real and positive,
// and 0 ≤ p ≤ 1.
//
// When no order is feasible (a coefficient of variation below 1/√MaxOrder,
// or a third moment no two-branch mixture has) the result is one Erlang
// matching the mean with order round(1/CV²) clamped to 1…MaxOrder; with
// fewer than two distinct values it is an Erlang of order MaxOrder with the
// sample mean. Either way Note says so. Zeros (zero runtimes, simultaneous
// arrivals) are valid data and count in the moments; negative samples, no
// samples, and samples that are all zero (ErrAllZero) are errors.
func FitHyperErlang(samples []float64) (HyperErlang, error) {
	h, err := fitHyperErlang(samples)
	if err != nil {
		return HyperErlang{}, fmt.Errorf("workload: fit: %w", err)
	}
	return h, nil
}

func fitHyperErlang(samples []float64) (HyperErlang, error) {
	if len(samples) == 0 {
		return HyperErlang{}, errors.New("no samples")
	}
	var sum float64
	distinct := false
	for i, x := range samples {
		if !(x >= 0) || math.IsInf(x, 0) {
			return HyperErlang{}, fmt.Errorf("sample %d is %v: samples must be non-negative and finite", i+1, x)
		}
		sum += x
		distinct = distinct || x != samples[0]
	}
	mean := sum / float64(len(samples))
	if mean == 0 {
		return HyperErlang{}, ErrAllZero
	}
	if !distinct {
		return HyperErlang{
			Order: MaxOrder, Probs: []float64{1}, Rates: []float64{MaxOrder / mean},
			Note: fmt.Sprintf("fewer than 2 distinct values (%d samples): Erlang of order %d with the sample mean", len(samples), MaxOrder),
		}, nil
	}
	// Moments of the samples scaled to mean 1, so every quantity below is of
	// order 1 whatever the time unit. The explicit float64 conversions stop
	// the compiler from fusing multiply-adds (it may on arm64), so a fit is
	// bit-for-bit the same on every platform and the embedded built-in
	// parameters can be checked exactly.
	var s2, s3 float64
	for _, x := range samples {
		y := x / mean
		y2 := float64(y * y)
		s2 += y2
		s3 += float64(y2 * y)
	}
	r2 := s2 / float64(len(samples))
	r3 := s3 / float64(len(samples))
	for n := 1; n <= MaxOrder; n++ {
		if h, ok := fitOrder(n, r2, r3); ok {
			for i := range h.Rates {
				h.Rates[i] /= mean
			}
			return h, nil
		}
	}
	cv2 := r2 - 1
	order := MaxOrder
	if cv2 > 0 {
		order = int(math.Max(1, math.Min(MaxOrder, math.Round(1/cv2))))
	}
	return HyperErlang{
		Order: order, Probs: []float64{1}, Rates: []float64{float64(order) / mean},
		Note: fmt.Sprintf("no two-branch fit of order ≤ %d matches the first three moments (CV %.3g): Erlang of order round(1/CV²) = %d matching the mean", MaxOrder, math.Sqrt(math.Max(cv2, 0)), order),
	}, nil
}

// fitOrder matches moments 1 (implicitly, the data are scaled to mean 1),
// r2 and r3 with two branches of order n; ok is false when infeasible.
func fitOrder(n int, r2, r3 float64) (HyperErlang, bool) {
	fn := float64(n)
	m1 := 1 / fn
	m2 := r2 / float64(fn*(fn+1))
	m3 := r3 / float64(float64(fn*(fn+1))*(fn+2))
	v := m2 - float64(m1*m1)
	if !(v > 0) {
		return HyperErlang{}, false
	}
	s := (m3 - float64(m1*m2)) / v
	q := float64(s*m1) - m2
	disc := float64(s*s) - float64(4*q)
	if !(s > 0 && q > 0 && disc > 0) {
		return HyperErlang{}, false
	}
	// The larger root directly, the smaller from the product, which avoids
	// cancellation in s − √disc.
	a2 := (s + math.Sqrt(disc)) / 2
	a1 := q / a2
	if !(a1 > 0 && a2 > a1) {
		return HyperErlang{}, false
	}
	p := (a2 - m1) / (a2 - a1)
	if !(p >= 0 && p <= 1) {
		return HyperErlang{}, false
	}
	return HyperErlang{Order: n, Probs: []float64{p, 1 - p}, Rates: []float64{1 / a1, 1 / a2}}, true
}

// classOf returns the class upper bound of a job size: the least power of
// two at or above it (1, 2, 4, 8, …).
func classOf(size int) int { return 1 << bits.Len(uint(size-1)) }

// classData accumulates one size class while fitting.
type classData struct {
	maxSize  int
	submits  []float64 // seconds, in source order
	runtimes []float64 // seconds
	sizes    map[int]int
}

// Fit fits a Model to the jobs of src, read to io.EOF: per job-size class,
// a hyper-Erlang of the times between successive arrivals of that class,
// one of the runtimes, and the empirical distribution of sizes. name is
// recorded as Model.Source and processors, the trace's machine size, as
// Model.Processors; a job wider than processors is an error. Over an SWF
// trace, use a jss.SWFSource with jss.DefaultConventions (size from field
// 8 else 5, runtime from field 4), which delivers jobs in submit order.
//
// Small classes are kept, with their fallbacks noted in the distributions'
// Note: a class with a single job, or whose jobs all arrived at the same
// instant, has no interarrival times to fit and gets an exponential with
// the class's mean rate over the whole trace (its jobs over the span from
// the first to the last submission of any class); a class with two jobs
// has a single interarrival time and gets FitHyperErlang's fallback for
// fewer than two distinct values, as does one whose jobs share a runtime.
// A class whose runtimes are all zero offers no load and has no runtime
// distribution (a rate would be infinite): it is left out and listed in
// Model.Notes.
func Fit(src jss.Source, name string, processors int) (Model, error) {
	if processors < 1 {
		return Model{}, fmt.Errorf("workload: fit %s: machine processors must be at least 1, got %d", name, processors)
	}
	classes := map[int]*classData{}
	first, last := math.Inf(1), math.Inf(-1)
	total := 0
	for {
		j, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Model{}, fmt.Errorf("workload: fit %s: %w", name, err)
		}
		if j.Processors < 1 || j.Processors > processors {
			return Model{}, fmt.Errorf("workload: fit %s: job %d: %d processors on a %d-processor machine", name, j.Number, j.Processors, processors)
		}
		at := j.Submit.Seconds()
		if at < last {
			return Model{}, fmt.Errorf("workload: fit %s: job %d submitted before the previous job: jobs must come in submit order", name, j.Number)
		}
		k := classOf(j.Processors)
		c := classes[k]
		if c == nil {
			c = &classData{maxSize: k, sizes: map[int]int{}}
			classes[k] = c
		}
		c.submits = append(c.submits, at)
		c.runtimes = append(c.runtimes, j.Runtime.Seconds())
		c.sizes[j.Processors]++
		first, last = math.Min(first, at), math.Max(last, at)
		total++
	}
	if total < 2 {
		return Model{}, fmt.Errorf("workload: fit %s: %d jobs: need at least 2 to see an arrival process", name, total)
	}
	span := last - first
	if span <= 0 {
		return Model{}, fmt.Errorf("workload: fit %s: all %d jobs were submitted at the same time: no arrival process to fit", name, total)
	}
	m := Model{Source: name, Processors: processors}
	for k := 1; k <= classOf(processors); k *= 2 {
		c := classes[k]
		if c == nil {
			continue
		}
		cl, err := c.fit(span)
		if errors.Is(err, ErrAllZero) {
			m.Notes = append(m.Notes, fmt.Sprintf("class %s: every runtime of its %d jobs is zero: left out", sizeRange(k), len(c.runtimes)))
			continue
		}
		if err != nil {
			return Model{}, fmt.Errorf("workload: fit %s: class %s: %w", name, sizeRange(k), err)
		}
		m.Classes = append(m.Classes, cl)
	}
	if len(m.Classes) == 0 {
		return Model{}, fmt.Errorf("workload: fit %s: every job has a zero runtime: nothing to model", name)
	}
	return m, nil
}

func (c *classData) fit(span float64) (Class, error) {
	n := len(c.submits)
	run, err := fitHyperErlang(c.runtimes)
	if err != nil {
		return Class{}, fmt.Errorf("runtimes: %w", err)
	}
	gaps := make([]float64, 0, n)
	for i := 1; i < n; i++ {
		gaps = append(gaps, c.submits[i]-c.submits[i-1])
	}
	var ia HyperErlang
	if len(gaps) > 0 {
		ia, err = fitHyperErlang(gaps)
	}
	switch {
	case len(gaps) == 0 || errors.Is(err, ErrAllZero):
		why := "1 job"
		if n > 1 {
			why = strconv.Itoa(n) + " jobs all submitted at once"
		}
		ia = HyperErlang{Order: 1, Probs: []float64{1}, Rates: []float64{float64(n) / span},
			Note: fmt.Sprintf("%s: no interarrival times to fit; exponential with the class's mean rate over the trace (%d in %gs)", why, n, span)}
	case err != nil:
		return Class{}, fmt.Errorf("interarrival times: %w", err)
	}
	sizes := make([]SizeProb, 0, len(c.sizes))
	for s := c.maxSize/2 + 1; s <= c.maxSize; s++ {
		if cnt := c.sizes[s]; cnt > 0 {
			sizes = append(sizes, SizeProb{Size: s, Prob: float64(cnt) / float64(n)})
		}
	}
	return Class{MaxSize: c.maxSize, Jobs: n, Interarrival: ia, Runtime: run, Sizes: sizes}, nil
}

// FitSWF fits a Model to an SWF trace under jss.DefaultConventions. The
// machine size is processors if positive, else the header's MaxProcs, else
// its MaxNodes; jobs wider than it are left out, as the simulator does.
// name names the trace in errors and becomes Model.Source.
func FitSWF(r *swf.Reader, name string, processors int) (Model, error) {
	procs, _, err := jss.MachineSize(processors, r.Header())
	if err != nil {
		return Model{}, fmt.Errorf("workload: fit %s: %w", name, err)
	}
	src, err := jss.NewSWFSource(r, jss.SWFSourceOptions{Name: name, Processors: procs, Conventions: jss.DefaultConventions()})
	if err != nil {
		return Model{}, fmt.Errorf("workload: fit %s: %w", name, err)
	}
	return Fit(src, name, procs)
}
