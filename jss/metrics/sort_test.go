package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSorterMatchesSlicesSort checks the radix sort against slices.Sort,
// bit for bit, on values like the metrics' (wide ranges, many repeats) and
// on the awkward ones: negatives, infinities, subnormals, and the NaN and
// negative zero that send it to slices.Sort.
func TestSorterMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var so sorter
	for name, gen := range sortKinds(rng) {
		for _, n := range []int{0, 1, 255, 256, 1000, 30000} {
			x := make([]float64, n)
			for i := range x {
				x[i] = gen()
			}
			want := slices.Clone(x)
			slices.Sort(want)
			so.sort(x)
			if name == "negativezero" {
				// Zeros of either sign are equal: only their number is fixed.
				for i := range x {
					if x[i] != want[i] {
						t.Fatalf("%s, %d values: at %d got %v, want %v", name, n, i, x[i], want[i])
					}
				}
				continue
			}
			for i := range x {
				if math.Float64bits(x[i]) != math.Float64bits(want[i]) && !(math.IsNaN(x[i]) && math.IsNaN(want[i])) {
					t.Fatalf("%s, %d values: at %d got %v, want %v", name, n, i, x[i], want[i])
				}
			}
		}
	}
}

// sortKinds are the value generators of the sort tests.
func sortKinds(rng *rand.Rand) map[string]func() float64 {
	return map[string]func() float64{
		"seconds":  func() float64 { return math.Round(rng.ExpFloat64() * 5000) },
		"ratios":   func() float64 { return max(1, rng.ExpFloat64()*rng.ExpFloat64()*100) },
		"repeats":  func() float64 { return float64(rng.IntN(3)) },
		"constant": func() float64 { return 1 },
		"ones among fractions": func() float64 {
			return []float64{1, 1, 1, rng.Float64(), 1 + rng.Float64(), math.Round(rng.ExpFloat64() * 3e6), math.Nextafter(1, 2), math.Nextafter(1, 0)}[rng.IntN(8)]
		},
		"large seconds": func() float64 { return math.Round(rng.ExpFloat64() * 5e6) },
		"signed":        func() float64 { return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)) },
		"special": func() float64 {
			return []float64{math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 0, 3.5}[rng.IntN(8)]
		},
		"close fractions": func() float64 { return 1 + float64(rng.IntN(100))*0x1p-52 },
		"all exponents":   func() float64 { return math.Ldexp(1+rng.Float64(), rng.IntN(2000)-1000) },
		"nan":             func() float64 { return []float64{math.NaN(), 1, 2, -3}[rng.IntN(4)] },
		"negativezero":    func() float64 { return []float64{math.Copysign(0, -1), 0, 1}[rng.IntN(3)] },
	}
}

// TestStatMatchesNaive checks stat (keys sorted in the sorter's buffers,
// the values' bits restored for slices.Sort when a NaN or negative zero
// turns up part way) against the plain computation: sort a copy, sum in
// order, interpolate.
func TestStatMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var so sorter
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for name, gen := range sortKinds(rng) {
		for _, c := range []struct {
			n    int
			late bool
		}{{1, false}, {255, false}, {256, false}, {256, true}, {1000, false}, {30000, false}, {30000, true}} {
			n := c.n
			x := make([]float64, n)
			for i := range x {
				x[i] = gen()
			}
			if c.late { // after every other key was made
				x[n-1] = []float64{math.NaN(), math.Copysign(0, -1)}[rng.IntN(2)]
			}
			want := slices.Clone(x)
			slices.Sort(want)
			sum := 0.0
			for _, v := range want {
				sum += v
			}
			got := so.stat(n, func(i int) float64 { return x[i] })
			w := Stat{Mean: sum / float64(n), Median: Quantile(want, 0.5), P95: Quantile(want, 0.95), Max: want[n-1]}
			if !same(got.Mean, w.Mean) || !same(got.Median, w.Median) || !same(got.P95, w.P95) || !same(got.Max, w.Max) {
				t.Errorf("%s, %d values: %+v, want %+v", name, n, got, w)
			}
		}
	}
}

// TestMSD64 checks msd64 against slices.Sort on keys that make it narrow
// buckets again and again: powers of two (each bucket holds all but the
// largest few), repeated, with and without noise in the low bits.
func TestMSD64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	count := new([digits][buckets]int32)
	for _, n := range []int{1, 2, 17, 64, 65, 300, 5000} {
		for _, noise := range []bool{false, true} {
			want := make([]uint64, n)
			for i := range want {
				want[i] = 1 << rng.IntN(64)
				if noise {
					want[i] += uint64(rng.IntN(3))
				}
			}
			hi, lo := make([]uint32, n), make([]uint32, n)
			for i, k := range want {
				hi[i], lo[i] = uint32(k>>32), uint32(k)
			}
			msd64(hi, lo, make([]uint32, n), make([]uint32, n), count, 0)
			slices.Sort(want)
			for i, k := range want {
				if got := uint64(hi[i])<<32 | uint64(lo[i]); got != k {
					t.Fatalf("%d keys (noise %v): at %d got %#x, want %#x", n, noise, i, got, k)
				}
			}
		}
	}
}

// BenchmarkSort sorts a run's worth of waits (28,000) with the radix sort
// and with slices.Sort, the baseline.
func BenchmarkSort(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 28_000)
	for i := range vals {
		vals[i] = math.Round(rng.ExpFloat64() * 5000)
	}
	x := make([]float64, len(vals))
	b.Run("radix", func(b *testing.B) {
		var so sorter
		for b.Loop() {
			copy(x, vals)
			so.sort(x)
		}
	})
	b.Run("slices.Sort", func(b *testing.B) {
		for b.Loop() {
			copy(x, vals)
			slices.Sort(x)
		}
	})
}

// TestAddOnes checks addOnes against adding ones one by one, bit for bit,
// on sums it adds at once and on those it must not (fractions, beyond
// 2^53, infinities, NaN, negative zero).
func TestAddOnes(t *testing.T) {
	for _, sum := range []float64{0, math.Copysign(0, -1), 0.5, 3, -7, -7.25, 1<<53 - 3, 1 << 53, -(1 << 52) + 0.5, 1e300, math.Inf(1), math.Inf(-1), math.NaN()} {
		for _, c := range []int{0, 1, 2, 5, 10, 1000} {
			want := sum
			for range c {
				want++
			}
			if got := addOnes(sum, c); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("addOnes(%v, %d) = %v, want %v", sum, c, got, want)
			}
		}
	}
}
