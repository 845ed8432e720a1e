package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// sampleMoments returns the first three raw moments of xs, computed
// directly (independently of the fitter's scaled two-pass sums).
func sampleMoments(xs []float64) [3]float64 {
	var m [3]float64
	for _, x := range xs {
		m[0] += x
		m[1] += x * x
		m[2] += x * x * x
	}
	for i := range m {
		m[i] /= float64(len(xs))
	}
	return m
}

func draws(h HyperErlang, n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = h.Sample(rng)
	}
	return xs
}

// cdf is the distribution function of h: for Erlang(n, λ),
// 1 − Σ_{k<n} e^{−λx}(λx)^k/k!.
func cdf(h HyperErlang, x float64) float64 {
	var f float64
	for i, p := range h.Probs {
		lx := h.Rates[i] * x
		term, sum := 1.0, 1.0
		for k := 1; k < h.Order; k++ {
			term *= lx / float64(k)
			sum += term
		}
		f += p * (1 - math.Exp(-lx)*sum)
	}
	return f
}

// cdfDistance is the largest difference between the distribution
// functions of a and b over a grid spanning b's bulk.
func cdfDistance(a, b HyperErlang) float64 {
	var d float64
	top := 10 * b.Mean()
	for i := 1; i <= 2000; i++ {
		x := top * float64(i) / 2000
		d = math.Max(d, math.Abs(cdf(a, x)-cdf(b, x)))
	}
	return d
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestMoments(t *testing.T) {
	// Erlang(3, 2): mean 3/2, E[X²] = 3·4/4 = 3, E[X³] = 3·4·5/8 = 7.5.
	e := HyperErlang{Order: 3, Probs: []float64{1}, Rates: []float64{2}}
	for k, want := range []float64{1, 1.5, 3, 7.5} {
		if got := e.Moment(k); math.Abs(got-want) > 1e-12 {
			t.Errorf("Erlang(3,2) moment %d = %v, want %v", k, got, want)
		}
	}
	if cv := e.CV(); math.Abs(cv-1/math.Sqrt(3)) > 1e-12 {
		t.Errorf("CV %v, want 1/√3", cv)
	}
	// Hyperexponential p=.3 rate 1, .7 rate 10: E[X²] = 2(.3 + .7/100).
	h := HyperErlang{Order: 1, Probs: []float64{0.3, 0.7}, Rates: []float64{1, 10}}
	if got := h.Moment(2); math.Abs(got-0.614) > 1e-12 {
		t.Errorf("H2 second moment %v, want 0.614", got)
	}
	if got := h.Mean(); math.Abs(got-0.37) > 1e-12 {
		t.Errorf("H2 mean %v, want 0.37", got)
	}
}

func TestSampleMatchesMoments(t *testing.T) {
	for _, h := range []HyperErlang{
		{Order: 1, Probs: []float64{1}, Rates: []float64{0.5}},
		{Order: 1, Probs: []float64{0.3, 0.7}, Rates: []float64{1, 10}},
		{Order: 3, Probs: []float64{0.5, 0.5}, Rates: []float64{1, 2}},
		{Order: 16, Probs: []float64{0.2, 0.8}, Rates: []float64{4, 40}}, // last product-of-uniforms order
		{Order: 40, Probs: []float64{0.6, 0.4}, Rates: []float64{1, 3}},  // Gamma sampler
		{Order: 200, Probs: []float64{1}, Rates: []float64{100}},
	} {
		xs := draws(h, 500_000, 7)
		m := sampleMoments(xs)
		mean, variance := m[0], m[1]-m[0]*m[0]
		wantVar := h.Moment(2) - h.Mean()*h.Mean()
		if relErr(mean, h.Mean()) > 0.02 || relErr(variance, wantVar) > 0.03 {
			t.Errorf("%+v: sample mean %.5g var %.5g, want %.5g and %.5g", h, mean, variance, h.Mean(), wantVar)
		}
		for _, x := range xs {
			if !(x >= 0) || math.IsInf(x, 0) {
				t.Fatalf("%+v: sample %v", h, x)
			}
		}
	}
}

func TestSampleIsDeterministic(t *testing.T) {
	h := HyperErlang{Order: 20, Probs: []float64{0.5, 0.5}, Rates: []float64{1, 2}}
	a, b := draws(h, 1000, 3), draws(h, 1000, 3)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %v then %v", i, a[i], b[i])
		}
	}
}

func TestValidate(t *testing.T) {
	if err := (HyperErlang{Order: 2, Probs: []float64{0.25, 0.75}, Rates: []float64{1, 3}}).Validate(); err != nil {
		t.Errorf("valid: %v", err)
	}
	err := HyperErlang{Order: 0, Probs: []float64{1.5, -0.2, 0.1}, Rates: []float64{0, math.Inf(1)}}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"order 0", "3 probabilities but 2 rates", "probability 1: 1.5", "probability 2: -0.2", "sum to 1.4", "rate 1: 0", "rate 2: +Inf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err := (HyperErlang{Order: 1}).Validate(); err == nil || !strings.Contains(err.Error(), "no branches") {
		t.Errorf("no branches: %v", err)
	}
}
