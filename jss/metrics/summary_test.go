package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// sortedSummary is the summary as computed before selection and merging:
// every metric's values sorted whole (stat), in the same two halves, run
// by run if set.
func sortedSummary(c *Collector, run func(a, b func())) Summary {
	s := c.totals()
	so := new(sorter)
	a := func() {
		s.Wait, s.Response, s.Execution = c.stat(so, mWait), c.stat(so, mResponse), c.stat(so, mExecution)
		s.ExecSlowdown = c.stat(so, mExecSlowdown)
	}
	b := func(so *sorter) {
		s.Slowdown, s.BoundedSlowdown = c.stat(so, mSlowdown), c.stat(so, mBoundedSlowdown)
	}
	if run == nil {
		a()
		b(so)
		return s
	}
	run(a, func() { b(new(sorter)) })
	return s
}

// sameStat reports whether a and b hold the same bits.
func sameStat(a, b Stat) bool {
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	return same(a.Mean, b.Mean) && same(a.Median, b.Median) && same(a.P95, b.P95) && same(a.Max, b.Max)
}

func sameSummary(t *testing.T, name string, got, want Summary) {
	t.Helper()
	for _, m := range []struct {
		name      string
		got, want Stat
	}{
		{"wait", got.Wait, want.Wait}, {"response", got.Response, want.Response},
		{"execution", got.Execution, want.Execution}, {"exec slowdown", got.ExecSlowdown, want.ExecSlowdown},
		{"slowdown", got.Slowdown, want.Slowdown}, {"bounded slowdown", got.BoundedSlowdown, want.BoundedSlowdown},
	} {
		if !sameStat(m.got, m.want) {
			t.Errorf("%s: %s %+v, want %+v", name, m.name, m.got, m.want)
		}
	}
	if got != want {
		t.Errorf("%s: %+v, want %+v", name, got, want)
	}
}

// atOnce runs a and b at once, as the simulator does.
func atOnce(a, b func()) {
	done := make(chan struct{})
	go func() { defer close(done); b() }()
	a()
	<-done
}

// jobKinds are generators of jobs (in seconds: wait, response, runtime)
// for the summary's tests: like a trace's, and the awkward ones.
func jobKinds(rng *rand.Rand) map[string]func() (wait, resp, run float64) {
	expo := func(mean float64) float64 { return math.Round(rng.ExpFloat64() * mean) }
	return map[string]func() (float64, float64, float64){
		"trace-like": func() (float64, float64, float64) {
			w := float64(rng.IntN(2)) * expo(7000)
			r := expo(9000) * float64(rng.IntN(8)) / 7
			return w, w + r, r
		},
		"short jobs": func() (float64, float64, float64) {
			w, r := expo(20), float64(rng.IntN(12))
			return w, w + r + float64(rng.IntN(3)), r
		},
		"zeros":    func() (float64, float64, float64) { return 0, 0, 0 },
		"constant": func() (float64, float64, float64) { return 7, 20, 13 },
		"two values": func() (float64, float64, float64) {
			w := float64(rng.IntN(2)) * 1e6
			return w, w + 5, 5
		},
		"clustered": func() (float64, float64, float64) { // one wide range holding most values, not one value
			w := 1e5 + float64(rng.IntN(3000))
			if rng.IntN(50) == 0 {
				w = expo(1e8)
			}
			return w, w + 100, 100
		},
		"int32 limits": func() (float64, float64, float64) {
			lim := []float64{math.MaxInt32, math.MinInt32, math.MaxInt32 - 1, math.MinInt32 + 1, 0, -1, 1}
			return lim[rng.IntN(len(lim))], lim[rng.IntN(len(lim))], lim[rng.IntN(len(lim))]
		},
		"negative": func() (float64, float64, float64) { // starts before submission, ends before start
			return -expo(500), expo(300) - 400, expo(200) - 100
		},
		"fractions": func() (float64, float64, float64) {
			w := rng.ExpFloat64() * 100
			r := rng.ExpFloat64() * 20
			return w, w + r, r * (0.5 + rng.Float64())
		},
	}
}

// collect returns a collector of n jobs of gen, with threshold tau.
func collect(n int, tau time.Duration, gen func() (wait, resp, run float64)) *Collector {
	c := NewCollector(64, tau)
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	for i := range n {
		w, r, u := gen()
		submit := s(float64(i))
		c.Add(Job{Submit: submit, Start: submit + s(w), End: submit + s(r), Processors: 1, Runtime: s(u)})
	}
	return c
}

// TestSummaryMatchesSorting checks the summary (wait, response, execution
// by selection; the slowdowns by one shared sort and merges) against every
// metric sorted whole, bit for bit, whole seconds and not, serially and in
// two halves at once, for several thresholds.
func TestSummaryMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for kind, gen := range jobKinds(rng) {
		for _, n := range []int{1, 2, 3, 4, 5, 19, 20, 21, 255, 256, 257, 1000, 30000} {
			for _, tau := range []time.Duration{0, time.Second / 2, time.Second, 100 * time.Second} {
				c := collect(n, tau, gen)
				name := fmt.Sprintf("%s, %d jobs, τ %v (whole %v)", kind, n, tau, c.whole)
				want := sortedSummary(c, nil)
				sameSummary(t, name, c.Summary(), want)
				sameSummary(t, name+" at once", c.SummaryWith(atOnce), want)
			}
		}
	}
}

// TestWholeStatMatchesNaive checks the selection against the plain
// computation (sort, sum in order, interpolate) on integer columns: the
// shapes that send it down each of its paths (one value, gathering,
// narrowing again, a value per bucket), and the sums beyond 2^53 that it
// leaves to the sort.
func TestWholeStatMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	gens := map[string]func() int32{
		"constant":  func() int32 { return -42 },
		"small":     func() int32 { return int32(rng.IntN(5)) },
		"wide":      func() int32 { return int32(rng.Uint32()) },
		"mostly 0":  func() int32 { return int32(rng.IntN(2) * rng.IntN(1e6)) },
		"clustered": func() int32 { return int32(1e6 + rng.IntN(5000) + rng.IntN(1000)*rng.IntN(2)*1e5) },
		"limits":    func() int32 { return []int32{math.MaxInt32, math.MinInt32, 0}[rng.IntN(3)] },
		"dense":     func() int32 { return int32(rng.IntN(2048 * 3)) },
	}
	var sel selector
	for name, gen := range gens {
		for _, n := range []int{1, 2, 3, 4, 7, 100, 600, 5000, 40000} {
			a, b := make([]int32, n), make([]int32, n)
			for i := range n {
				a[i], b[i] = gen(), gen()
			}
			for _, x := range []intColumn{{a: a}, {a: a, b: b}} {
				v := make([]float64, n)
				for i := range v {
					v[i] = float64(x.value(i))
				}
				slices.Sort(v)
				sum := 0.0
				for _, f := range v {
					sum += f
				}
				want := Stat{Mean: sum / float64(n), Median: Quantile(v, 0.5), P95: Quantile(v, 0.95), Max: v[n-1]}
				got, ok := sel.wholeStat(x)
				if !ok {
					t.Errorf("%s, %d values (difference %v): not taken", name, n, x.b != nil)
				} else if !sameStat(got, want) {
					t.Errorf("%s, %d values (difference %v): %+v, want %+v", name, n, x.b != nil, got, want)
				}
			}
		}
	}
}

// TestWholeStatLeavesInexactSums: values whose magnitudes sum beyond 2^53
// (a float64 sum of them may round) are left to the sort, and the summary
// is still the sorted one.
func TestWholeStatLeavesInexactSums(t *testing.T) {
	n := exactSumBound>>32 + 2 // differences near 2^32 each
	a, b := make([]int32, n), make([]int32, n)
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range n {
		a[i], b[i] = math.MaxInt32-int32(rng.IntN(1000)), math.MinInt32+int32(rng.IntN(1000))
	}
	var sel selector
	if _, ok := sel.wholeStat(intColumn{a: a, b: b}); ok {
		t.Fatalf("%d differences near 2^32 taken", n)
	}
	if _, ok := sel.wholeStat(intColumn{a: a[:n/2], b: b[:n/2]}); !ok {
		t.Fatalf("%d differences near 2^32 not taken", n/2)
	}
	c := &Collector{n: n, whole: true, wait32: b, resp32: a, run32: make([]int32, n), tau: DefaultTau}
	var sc scratch
	var so sorter
	if got, want := c.summaryStat(&sc, mExecution), c.stat(&so, mExecution); !sameStat(got, want) {
		t.Errorf("execution %+v, want %+v", got, want)
	}
}

// TestLogBuckets: logBucket is monotone, below logBuckets, and its bounds
// (logBounds) hold every d it puts in the bucket, next to the next one's.
func TestLogBuckets(t *testing.T) {
	var ds []uint64
	for d := range uint64(300) {
		ds = append(ds, d)
	}
	for s := range 64 {
		p := uint64(1) << s
		ds = append(ds, p-1, p, p+1, p|p>>1, p|p>>3)
	}
	ds = append(ds, math.MaxUint64)
	slices.Sort(ds)
	prev := uint64(0)
	for _, d := range ds {
		b := logBucket(d)
		lo, hi := logBounds(int(b))
		if b < prev || b >= logBuckets || d < lo || d > hi {
			t.Fatalf("d %d: bucket %d (after %d) of [%d, %d]", d, b, prev, lo, hi)
		}
		if b+1 < logBuckets {
			if next, _ := logBounds(int(b + 1)); next != hi+1 {
				t.Fatalf("bucket %d ends at %d, the next begins at %d", b, hi, next)
			}
		}
		prev = b
	}
}
