package ctxslices

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortFuncSortsAsSlicesDoes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, step, step + 1, 3*step + 17, 5 * step} {
		s := make([]int, n)
		for i := range s {
			s[i] = r.IntN(n/3 + 1) // repeats
		}
		want := slices.Clone(s)
		slices.Sort(want)
		if err := SortFunc(context.Background(), s, cmp.Compare[int]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s, want) {
			t.Fatalf("n=%d: not sorted as slices.Sort sorts", n)
		}
	}
}

func TestShuffleDrawsAsRandShuffles(t *testing.T) {
	for _, n := range []int{0, 1, 2, 10, 3*step + 5} {
		a, b := make([]int, n), make([]int, n)
		for i := range a {
			a[i], b[i] = i, i
		}
		ra, rb := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
		ra.Shuffle(n, func(i, j int) { a[i], a[j] = a[j], a[i] })
		if err := Shuffle(context.Background(), rb, n, func(i, j int) { b[i], b[j] = b[j], b[i] }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) || ra.Uint64() != rb.Uint64() {
			t.Fatalf("n=%d: a different permutation, or a different number of draws, than rand.Shuffle", n)
		}
	}
}

func TestCancelledStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := make([]int, 4*step)
	for i := range s {
		s[i] = len(s) - i
	}
	if err := SortFunc(ctx, s, cmp.Compare[int]); !errors.Is(err, context.Canceled) {
		t.Errorf("SortFunc with a cancelled context: %v", err)
	}
	swaps := 0
	err := Shuffle(ctx, rand.New(rand.NewPCG(1, 1)), 4*step, func(i, j int) { swaps++ })
	if !errors.Is(err, context.Canceled) || swaps >= 4*step-1 {
		t.Errorf("Shuffle with a cancelled context: %v after %d swaps", err, swaps)
	}
}

// BenchmarkSortFunc compares the stepped sort with slices.SortFunc on a
// million elements: the price of stopping promptly.
func BenchmarkSortFunc(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	src := make([]int64, 1_000_000)
	for i := range src {
		src[i] = r.Int64()
	}
	s := make([]int64, len(src))
	b.Run("ctxslices", func(b *testing.B) {
		for b.Loop() {
			copy(s, src)
			_ = SortFunc(context.Background(), s, cmp.Compare[int64])
		}
	})
	b.Run("slices-baseline", func(b *testing.B) {
		for b.Loop() {
			copy(s, src)
			slices.SortFunc(s, cmp.Compare[int64])
		}
	})
}
