// Package metrics computes the standard job-scheduling metrics from finished
// jobs: wait, response, slowdown and bounded slowdown (mean, median, 95th
// percentile, maximum), utilization, makespan, sum of flow times and
// weighted flow time. It knows nothing of how the jobs were run, so
// simulated and measured schedules are judged by the same code.
//
// Definitions (times in seconds):
//
//	wait              start − submit
//	execution         end − start
//	exec slowdown     execution / max(runtime, 1 ms)
//	response (flow)   end − submit
//	slowdown          max(1, response / max(runtime, 1 s))
//	bounded slowdown  max(1, response / max(runtime, τ)), τ = 10 s by default
//	makespan          last end − first submit
//	utilization       Σ processors × runtime / (machine processors × makespan)
//	sum of flow times Σ response
//	weighted flow     Σ w × response, w = processors × runtime
//
// runtime is the job's dedicated runtime (its work): what it takes alone.
// Under space sharing execution equals runtime (exec slowdown 1); under
// time sharing it grows with the share of the machine a job gets.
//
// Slowdown is the bounded slowdown with τ = 1 s: one definition, for
// simulated and measured jobs alike, and never below 1, as a slowdown is by
// definition. The one-second floor keeps zero-length jobs (common in real
// logs, whose resolution is a second) finite and counts a job that ends
// within a second of its submission as not slowed down (dividing by the
// floor alone gave sub-second jobs slowdowns below 1); the outer max(1, …)
// does the same for a measured job that ran faster than its modelled
// dedicated runtime (a network faster than the nominal one). Execution
// slowdown keeps its ratio unbounded, a millisecond floor only, since its
// jobs are benchmark programs: it shows such a job below 1. Percentiles
// interpolate linearly between order statistics (R's type 7, NumPy's
// default).
package metrics

import (
	"math"
	"slices"
	"time"
)

// DefaultTau is the bounded-slowdown threshold τ.
const DefaultTau = 10 * time.Second

// Job is what the metrics need of one finished job.
type Job struct {
	Submit, Start, End time.Duration
	Processors         int
	// Runtime is the job's dedicated runtime: what it would take alone.
	Runtime time.Duration
}

// SlowdownTau is slowdown's threshold: the bounded slowdown's τ for
// Slowdown.
const SlowdownTau = time.Second

// Slowdown returns max(1, response / max(runtime, 1 s)): BoundedSlowdown
// with τ = SlowdownTau, at least 1.
func Slowdown(response, runtime time.Duration) float64 {
	return slowdown(response.Seconds(), runtime.Seconds())
}

func slowdown(response, runtime float64) float64 {
	return boundedSlowdown(response, runtime, SlowdownTau.Seconds())
}

// BoundedSlowdown returns max(1, response / max(runtime, tau)).
func BoundedSlowdown(response, runtime, tau time.Duration) float64 {
	return boundedSlowdown(response.Seconds(), runtime.Seconds(), tau.Seconds())
}

func boundedSlowdown(response, runtime, tau float64) float64 {
	return max(1, response/max(runtime, tau))
}

// Stat summarises one metric over all jobs.
type Stat struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
	Max    float64 `json:"max"`
}

// Summary holds the aggregate metrics. Times are in seconds.
type Summary struct {
	Jobs            int     `json:"jobs"`
	Wait            Stat    `json:"wait_s"`
	Execution       Stat    `json:"execution_s"`
	ExecSlowdown    Stat    `json:"exec_slowdown"`
	Response        Stat    `json:"response_s"`
	Slowdown        Stat    `json:"slowdown"`
	BoundedSlowdown Stat    `json:"bounded_slowdown"`
	Utilization     float64 `json:"utilization"`
	Makespan        float64 `json:"makespan_s"`
	SumFlow         float64 `json:"sum_flow_s"`
	WeightedFlow    float64 `json:"weighted_flow"`
	Tau             float64 `json:"tau_s"`
}

// Collector accumulates finished jobs. It keeps three numbers per job
// (wait, response, runtime; execution is the first two's difference) so
// that medians and percentiles, overall and by runtime bin, are exact.
// While every one is a whole number of seconds within ±68 years (all of a
// simulated SWF trace's: its times are seconds) they are kept as int32, 12
// bytes a job; the first that is not moves them all to float64, 24 bytes
// a job. Either way the metrics are the same, bit for bit: a whole
// number of seconds is exactly the float64 Seconds gives. (Fresh memory
// is what a short simulation pays most for.)
type Collector struct {
	procs                 int
	tau                   time.Duration
	n                     int
	whole                 bool      // the int32 columns are in use
	wait32, resp32, run32 []int32   // seconds, while whole
	wait, resp, run       []float64 // seconds, once not whole
	// binWork is Σ processors × runtime of each runtime bin's jobs, summed
	// in job order as ByRuntime reports it: kept as jobs come, so no
	// per-job array of widths is needed.
	binWork []float64

	first, last  time.Duration
	work         float64 // processor-seconds
	sumFlow      float64
	weightedFlow float64
}

// NewCollector returns a Collector for a machine of the given size. A zero
// tau means DefaultTau.
func NewCollector(processors int, tau time.Duration) *Collector {
	if tau <= 0 {
		tau = DefaultTau
	}
	return &Collector{procs: processors, tau: tau, whole: true}
}

// Grow makes room for n more jobs, so that adding them allocates nothing
// (a trace's header says how many jobs to expect).
func (c *Collector) Grow(n int) {
	if c.whole {
		c.wait32 = slices.Grow(c.wait32, n)
		c.resp32 = slices.Grow(c.resp32, n)
		c.run32 = slices.Grow(c.run32, n)
		return
	}
	c.wait = slices.Grow(c.wait, n)
	c.resp = slices.Grow(c.resp, n)
	c.run = slices.Grow(c.run, n)
}

// Seconds is d.Seconds(), bit for bit, without its float division when
// d is a whole number of seconds (every SWF time): then that division
// adds 0/1e9 to float64(sec), which changes nothing. The simulator calls
// it twice per job end, where the division showed in the profile.
func Seconds(d time.Duration) float64 {
	sec, nsec := d/time.Second, d%time.Second
	if nsec == 0 {
		return float64(sec)
	}
	return float64(sec) + float64(nsec)/1e9
}

// seconds32 returns d in seconds as an int32 if it is a whole number of
// them that fits.
func seconds32(d time.Duration) (int32, bool) {
	s := d / time.Second
	return int32(s), d%time.Second == 0 && s >= math.MinInt32 && s <= math.MaxInt32
}

// toFloat moves the int32 columns to float64 ones, for good.
func (c *Collector) toFloat() {
	c.whole = false
	conv := func(x []int32) []float64 {
		f := make([]float64, len(x), max(cap(x), 2*len(x)))
		for i, v := range x {
			f[i] = float64(v)
		}
		return f
	}
	c.wait, c.resp, c.run = conv(c.wait32), conv(c.resp32), conv(c.run32)
	c.wait32, c.resp32, c.run32 = nil, nil, nil
}

// Add records one finished job.
func (c *Collector) Add(j Job) {
	if c.n == 0 || j.Submit < c.first {
		c.first = j.Submit
	}
	if c.n == 0 || j.End > c.last {
		c.last = j.End
	}
	resp := Seconds(j.End - j.Submit)
	run := Seconds(j.Runtime)
	if c.whole {
		w, ok1 := seconds32(j.Start - j.Submit)
		r, ok2 := seconds32(j.End - j.Submit)
		u, ok3 := seconds32(j.Runtime)
		if ok1 && ok2 && ok3 {
			c.wait32 = append(c.wait32, w)
			c.resp32 = append(c.resp32, r)
			c.run32 = append(c.run32, u)
		} else {
			c.toFloat()
		}
	}
	if !c.whole {
		c.wait = append(c.wait, (j.Start - j.Submit).Seconds())
		c.resp = append(c.resp, resp)
		c.run = append(c.run, run)
	}
	c.n++
	w := float64(j.Processors) * run
	if c.binWork == nil {
		c.binWork = make([]float64, len(RuntimeBinEdges)+1)
	}
	c.binWork[RuntimeBin(time.Duration(run*float64(time.Second)))] += w
	c.work += w
	c.sumFlow += resp
	c.weightedFlow += w * resp
}

// Len returns the number of jobs added.
func (c *Collector) Len() int { return c.n }

// columns returns the jobs' wait, response and runtime in seconds, by
// index, whichever way they are kept.
func (c *Collector) columns() (wait, resp, run func(i int) float64) {
	if c.whole {
		return func(i int) float64 { return float64(c.wait32[i]) },
			func(i int) float64 { return float64(c.resp32[i]) },
			func(i int) float64 { return float64(c.run32[i]) }
	}
	return func(i int) float64 { return c.wait[i] },
		func(i int) float64 { return c.resp[i] },
		func(i int) float64 { return c.run[i] }
}

// The summary's per-job metrics.
type metric int

const (
	mWait metric = iota
	mResponse
	mExecution
	mExecSlowdown
	mSlowdown
	mBoundedSlowdown
)

// fillMetric gives k the bits of metric m of every job: one loop per
// metric and column type, no call of a function value per job.
func fillMetric[T int32 | float64](k *keys, m metric, wait, resp, run []T, tau float64) {
	n := len(k.hi)
	wait, resp, run = wait[:n], resp[:n], run[:n]
	switch m {
	case mWait:
		for i := range n {
			k.put(math.Float64bits(float64(wait[i])))
		}
	case mResponse:
		for i := range n {
			k.put(math.Float64bits(float64(resp[i])))
		}
	case mExecution:
		for i := range n {
			k.put(math.Float64bits(float64(resp[i]) - float64(wait[i])))
		}
	case mExecSlowdown:
		for i := range n {
			k.put(math.Float64bits((float64(resp[i]) - float64(wait[i])) / max(float64(run[i]), 1e-3)))
		}
	case mSlowdown:
		for i := range n {
			k.put(math.Float64bits(slowdown(float64(resp[i]), float64(run[i]))))
		}
	case mBoundedSlowdown:
		for i := range n {
			k.put(math.Float64bits(boundedSlowdown(float64(resp[i]), float64(run[i]), tau)))
		}
	}
}

// stat summarises metric m over every job.
func (c *Collector) stat(so *sorter, m metric) Stat {
	tau := c.tau.Seconds()
	wait, resp, run := c.columns()
	value := func(i int) float64 {
		switch m {
		case mWait:
			return wait(i)
		case mResponse:
			return resp(i)
		case mExecution:
			return resp(i) - wait(i)
		case mExecSlowdown:
			return (resp(i) - wait(i)) / max(run(i), 1e-3)
		case mSlowdown:
			return slowdown(resp(i), run(i))
		}
		return boundedSlowdown(resp(i), run(i), tau)
	}
	return so.statKeys(c.n, func(k *keys) {
		if c.whole {
			fillMetric(k, m, c.wait32, c.resp32, c.run32, tau)
		} else {
			fillMetric(k, m, c.wait, c.resp, c.run, tau)
		}
	}, value)
}

// scratch is the working memory of one half of a summary.
type scratch struct {
	so  sorter
	sel selector
	// The short jobs' slowdowns' sorts, and the jobs (see slowdownStats).
	short, shortBounded sorter
	shortJobs           []int32
	// The jobs whose execution slowdown is not 1 for certain (see
	// wholeExecSlowdown).
	others []int32
}

// summaryStat is stat, but by selection for the whole-second integers
// (wait, response, execution) whose sum is exact (see select.go).
func (c *Collector) summaryStat(sc *scratch, m metric) Stat {
	if c.whole && m <= mExecution {
		x := intColumn{a: c.wait32[:c.n]}
		switch m {
		case mResponse:
			x.a = c.resp32[:c.n]
		case mExecution:
			x = intColumn{a: c.resp32[:c.n], b: c.wait32[:c.n]}
		}
		if st, ok := sc.sel.wholeStat(x); ok {
			return st
		}
	}
	if c.whole && m == mExecSlowdown {
		return c.wholeExecSlowdown(sc)
	}
	return c.stat(&sc.so, m)
}

// wholeExecSlowdown is stat's for the execution slowdown of whole
// seconds. A job that ran as long as alone (at least a second) has a
// slowdown of exactly 1 (e/e), most jobs under space sharing: they are
// told by comparing integers, and counted as 1's; only the others'
// values are computed (a division each) and sorted.
func (c *Collector) wholeExecSlowdown(sc *scratch) Stat {
	n := c.n
	if n > math.MaxInt32/4 {
		return c.stat(&sc.so, mExecSlowdown)
	}
	wait, resp, run := c.wait32[:n], c.resp32[:n], c.run32[:n]
	others := sc.others[:0]
	for i := range n {
		if int64(resp[i])-int64(wait[i]) != int64(run[i]) || run[i] < 1 {
			others = append(others, int32(i))
		}
	}
	sc.others = others
	// Room for the others' keys only (fresh memory): the 1's are counted.
	seq, ok := sc.so.sorted(len(others), func(k *keys) {
		k.ones = n - len(others)
		for _, i := range others {
			k.put(math.Float64bits((float64(resp[i]) - float64(wait[i])) / max(float64(run[i]), 1e-3)))
		}
	})
	if !ok {
		return c.stat(&sc.so, mExecSlowdown) // a NaN or negative zero: slices.Sort's order
	}
	return seq.stat()
}

// Summary computes the aggregate metrics. It may be called more than once.
func (c *Collector) Summary() Summary {
	return c.summary(nil)
}

// SummaryWith is Summary with its six per-metric statistics computed by
// two functions that share no scratch memory and only read the collector:
// run calls both, one after the other or at once, and returns when both
// have returned. The two slowdowns (one shared sort, see slowdownStats)
// are one half; the four others (selections, see select.go, and the
// execution slowdown's sort, mostly of 1's) the other.
func (c *Collector) SummaryWith(run func(a, b func())) Summary {
	return c.summary(run)
}

// totals is the summary without its per-job metrics' Stats.
func (c *Collector) totals() Summary {
	s := Summary{
		Jobs:         c.n,
		SumFlow:      c.sumFlow,
		WeightedFlow: c.weightedFlow,
		Tau:          c.tau.Seconds(),
	}
	if s.Jobs == 0 {
		return s
	}
	s.Makespan = (c.last - c.first).Seconds()
	if s.Makespan > 0 && c.procs > 0 {
		s.Utilization = c.work / (float64(c.procs) * s.Makespan)
	}
	return s
}

// summary is Summary, its halves run by run if set (each with scratch of
// its own), else in turn on one scratch (less fresh memory).
func (c *Collector) summary(run func(a, b func())) Summary {
	s := c.totals()
	if s.Jobs == 0 {
		return s
	}
	sc := new(scratch)
	a := func() {
		s.Wait = c.summaryStat(sc, mWait)
		s.Response = c.summaryStat(sc, mResponse)
		s.Execution = c.summaryStat(sc, mExecution)
		s.ExecSlowdown = c.summaryStat(sc, mExecSlowdown)
	}
	b := func(sc *scratch) {
		s.Slowdown, s.BoundedSlowdown = c.slowdownStats(sc)
	}
	if run == nil {
		a()
		b(sc)
		return s
	}
	run(a, func() { b(new(scratch)) })
	return s
}

// Quantile returns the q-quantile of sorted values, interpolating linearly
// between order statistics (R type 7). It returns 0 for no values.
func Quantile(sorted []float64, q float64) float64 {
	return quantile(len(sorted), func(i int) float64 { return sorted[i] }, q)
}

// quantile is Quantile of the n sorted values at(i).
func quantile(n int, at func(i int) float64, q float64) float64 {
	if n == 0 {
		return 0
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return at(n - 1)
	}
	return at(lo) + (h-float64(lo))*(at(lo+1)-at(lo))
}
