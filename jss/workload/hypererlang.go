package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// HyperErlang is a hyper-Erlang distribution of common order: with
// probability Probs[i] a value is Erlang(Order, Rates[i]), the sum of Order
// independent exponentials of rate Rates[i]. Times are in seconds, rates in
// 1/s. Order 1 is a hyperexponential; a single branch is a plain Erlang.
type HyperErlang struct {
	Order int       `json:"order"`
	Probs []float64 `json:"probs"`
	Rates []float64 `json:"rates"`
	// Note says when the distribution is a fallback rather than a
	// three-moment fit, and why.
	Note string `json:"note,omitempty"`
}

// Mean returns E[X].
func (h HyperErlang) Mean() float64 { return h.Moment(1) }

// Moment returns the k-th raw moment E[X^k] = Σ p_i·n(n+1)…(n+k−1)/λ_i^k.
func (h HyperErlang) Moment(k int) float64 {
	rising := 1.0 // n(n+1)…(n+k−1), the k-th moment of Erlang(n, 1)
	for j := range k {
		rising *= float64(h.Order + j)
	}
	var m float64
	for i, p := range h.Probs {
		m += p * rising / math.Pow(h.Rates[i], float64(k))
	}
	return m
}

// CV returns the coefficient of variation, standard deviation over mean.
func (h HyperErlang) CV() float64 {
	m1 := h.Moment(1)
	v := h.Moment(2) - m1*m1
	if m1 <= 0 || v <= 0 {
		return 0
	}
	return math.Sqrt(v) / m1
}

// gammaThreshold is the largest order sampled as a product of uniforms:
// 16 factors of at least 2^-53 cannot underflow a float64, and beyond it a
// Gamma sampler's constant cost wins.
const gammaThreshold = 16

// Sample draws one value. It picks a branch with one uniform, then draws
// Erlang(Order, rate) as −log(U_1⋯U_n)/λ for small orders and with the
// Marsaglia–Tsang Gamma sampler for large ones.
func (h HyperErlang) Sample(rng *rand.Rand) float64 {
	i := 0
	if len(h.Probs) > 1 {
		u := rng.Float64()
		for i < len(h.Probs)-1 {
			if u < h.Probs[i] {
				break
			}
			u -= h.Probs[i]
			i++
		}
	}
	return erlang(rng, h.Order, h.Rates[i])
}

func erlang(rng *rand.Rand, n int, rate float64) float64 {
	if n <= gammaThreshold {
		prod := 1.0
		for range n {
			prod *= 1 - rng.Float64() // in (0, 1], so the log is finite
		}
		return -math.Log(prod) / rate
	}
	return gamma(rng, float64(n)) / rate
}

// gamma draws Gamma(shape, 1) for shape ≥ 1 (Marsaglia and Tsang 2000).
func gamma(rng *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Validate reports every problem with the distribution.
func (h HyperErlang) Validate() error {
	var errs []error
	if h.Order < 1 {
		errs = append(errs, fmt.Errorf("order %d: must be at least 1", h.Order))
	}
	if len(h.Probs) == 0 {
		errs = append(errs, errors.New("no branches"))
	}
	if len(h.Probs) != len(h.Rates) {
		errs = append(errs, fmt.Errorf("%d probabilities but %d rates", len(h.Probs), len(h.Rates)))
	}
	sum := 0.0
	for i, p := range h.Probs {
		if !(p >= 0 && p <= 1) {
			errs = append(errs, fmt.Errorf("probability %d: %v is not in [0, 1]", i+1, p))
		}
		sum += p
	}
	if len(h.Probs) > 0 && math.Abs(sum-1) > 1e-9 {
		errs = append(errs, fmt.Errorf("probabilities sum to %v, not 1", sum))
	}
	for i, r := range h.Rates {
		if !(r > 0) || math.IsInf(r, 0) {
			errs = append(errs, fmt.Errorf("rate %d: %v must be positive and finite", i+1, r))
		}
	}
	return errors.Join(errs...)
}
