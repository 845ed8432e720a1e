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
	kinds := map[string]func() float64{
		"seconds":  func() float64 { return math.Round(rng.ExpFloat64() * 5000) },
		"ratios":   func() float64 { return max(1, rng.ExpFloat64()*rng.ExpFloat64()*100) },
		"repeats":  func() float64 { return float64(rng.IntN(3)) },
		"constant": func() float64 { return 1 },
		"signed":   func() float64 { return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)) },
		"special": func() float64 {
			return []float64{math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 0, 3.5}[rng.IntN(8)]
		},
		"nan":          func() float64 { return []float64{math.NaN(), 1, 2, -3}[rng.IntN(4)] },
		"negativezero": func() float64 { return []float64{math.Copysign(0, -1), 0, 1}[rng.IntN(3)] },
	}
	var so sorter
	for name, gen := range kinds {
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
