package strobe

import (
	"slices"
	"time"
)

// distOf summarises xs (nanoseconds), reordering it.
func distOf(xs []int64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	slices.Sort(xs)
	var sum int64
	for _, x := range xs {
		sum += x
	}
	return Dist{
		N:    len(xs),
		Mean: time.Duration(sum / int64(len(xs))),
		P50:  time.Duration(rank(xs, 50)),
		P99:  time.Duration(rank(xs, 99)),
		Max:  time.Duration(xs[len(xs)-1]),
	}
}

// rank is the nearest-rank p-th percentile of sorted xs: the smallest
// value with at least p% of the sample at or below it.
func rank(sorted []int64, p int) int64 {
	i := (p*len(sorted) + 99) / 100 // ceil(p·n/100)
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}

// ring keeps the last cap(buf) values of T: fixed memory however long a
// node runs.
type ring[T any] struct {
	buf  []T
	next int  // where the next value goes
	full bool // buf has wrapped
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) add(v T) {
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// snapshot returns the values, oldest first, in a new slice.
func (r *ring[T]) snapshot() []T {
	if !r.full {
		return slices.Clone(r.buf[:r.next])
	}
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
