// Package ctxslices sorts and shuffles large slices in steps, checking a
// context between them, so that a command told to stop while it orders
// millions of jobs stops within milliseconds, not after the whole sort.
// The results are those of the slices and math/rand/v2 functions they
// stand for: the same order for a total order (sorting is not stable),
// the same permutation for the same generator.
package ctxslices

import (
	"context"
	"math/rand/v2"
	"slices"
)

// step is how many elements are handled between two looks at the context.
const step = 1 << 15

// SortFunc sorts s by cmp as slices.SortFunc does, in blocks merged
// pairwise, and returns ctx's error, leaving s in some order, if ctx ends
// first.
func SortFunc[E any](ctx context.Context, s []E, cmp func(a, b E) int) error {
	if len(s) <= step {
		slices.SortFunc(s, cmp)
		return nil
	}
	for lo := 0; lo < len(s); lo += step {
		if err := ctx.Err(); err != nil {
			return err
		}
		slices.SortFunc(s[lo:min(lo+step, len(s))], cmp)
	}
	src, dst := s, make([]E, len(s))
	for width := step; width < len(s); width *= 2 {
		for lo := 0; lo < len(s); lo += 2 * width {
			mid, hi := min(lo+width, len(s)), min(lo+2*width, len(s))
			if err := merge(ctx, dst[lo:hi], src[lo:mid], src[mid:hi], cmp); err != nil {
				return err
			}
		}
		src, dst = dst, src
	}
	copy(s, src) // a no-op when the last pass wrote s
	return nil
}

// merge merges the sorted a and b into dst (len(a)+len(b) long).
func merge[E any](ctx context.Context, dst, a, b []E, cmp func(a, b E) int) error {
	i, j := 0, 0
	for k := range dst {
		if k%step == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if j == len(b) || i < len(a) && cmp(a[i], b[j]) <= 0 {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
	}
	return nil
}

// Shuffle permutes n elements with swap as r.Shuffle does, drawing the
// same numbers (the same permutation), and returns ctx's error if ctx ends
// first.
func Shuffle(ctx context.Context, r *rand.Rand, n int, swap func(i, j int)) error {
	for i := n - 1; i > 0; i-- {
		if i%step == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		swap(i, int(r.Uint64N(uint64(i+1))))
	}
	return nil
}
