package metrics

import (
	"math"
	"slices"
)

// sorter sorts float64s as slices.Sort does, by a radix sort of their bits:
// the summary sorts every metric of every job (six sorts of the whole run),
// and comparison sorts of tens of thousands of values took a tenth of a
// simulation. Its buffers are reused from one sort to the next.
//
// The result is the same slice, bit for bit, as slices.Sort's: the bits of
// two floats compare as the floats do once mapped as below, except for NaN
// and negative zero (equal to zero but not the same bits), so values with
// either are sorted by slices.Sort itself. Means summed over the sorted
// values therefore do not change in their last bit.
type sorter struct {
	keys, tmp []uint64
	// count holds per digit the buckets' counts, then their offsets. On
	// the heap, allocated with the keys: as an array in the struct it made
	// the summary's frame 49 KB, and the goroutine's stack grew (copied
	// into fresh memory at each doubling) to hold it.
	count *[digits][buckets]int32
}

// radixMin is the length below which slices.Sort is faster.
const radixMin = 256

// Digits of 11 bits: six passes, each with a count table that fits in the
// first-level cache.
const (
	digitBits = 11
	digits    = (64 + digitBits - 1) / digitBits
	buckets   = 1 << digitBits
)

// sort sorts x in increasing order.
func (s *sorter) sort(x []float64) {
	keys, ok := s.sortedKeys(len(x), func(i int) float64 { return x[i] })
	if !ok {
		slices.Sort(x)
		return
	}
	for i, k := range keys {
		x[i] = fromOrderedBits(k)
	}
}

// stat summarises the n values v(i), n > 0: the mean (summed over the
// sorted values), median, 95th percentile and maximum. It sorts the
// values' keys in the sorter's own buffers: no copy of the values is made
// (for the summary's six metrics of every job, one array fewer to fault
// in).
func (s *sorter) stat(n int, v func(i int) float64) Stat {
	keys, ok := s.sortedKeys(n, v)
	if ok {
		return sortedStat(n, func(i int) float64 { return fromOrderedBits(keys[i]) })
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = v(i)
	}
	slices.Sort(x)
	return sortedStat(n, func(i int) float64 { return x[i] })
}

// sortedStat is stat of the n sorted values at(i).
func sortedStat(n int, at func(i int) float64) Stat {
	sum := 0.0
	for i := range n {
		sum += at(i)
	}
	return Stat{
		Mean:   sum / float64(n),
		Median: quantile(n, at, 0.5),
		P95:    quantile(n, at, 0.95),
		Max:    at(n - 1),
	}
}

// sortedKeys returns the keys (orderedBits) of the n values v(i) in
// increasing order, in one of the sorter's buffers; ok is false when the
// radix sort does not apply (too few values, or a NaN or negative zero
// among them): slices.Sort's order is then the one to use.
func (s *sorter) sortedKeys(n int, v func(i int) float64) (keys []uint64, ok bool) {
	if n < radixMin || n > math.MaxInt32 {
		return nil, false
	}
	if cap(s.keys) < n {
		s.keys, s.tmp = make([]uint64, n), make([]uint64, n)
	}
	if s.count == nil {
		s.count = new([digits][buckets]int32)
	}
	keys, tmp := s.keys[:n], s.tmp[:n]
	count := s.count
	*count = [digits][buckets]int32{}
	for i := range keys {
		v := v(i)
		if v != v || (v == 0 && math.Signbit(v)) {
			return nil, false
		}
		k := orderedBits(v)
		keys[i] = k
		for d := range digits {
			count[d][(k>>(d*digitBits))&(buckets-1)]++
		}
	}
	for d := range digits {
		c := &count[d]
		if int(c[(keys[0]>>(d*digitBits))&(buckets-1)]) == n {
			continue // every key has this digit: the pass would not move any
		}
		sum := int32(0)
		for b := range c {
			c[b], sum = sum, sum+c[b]
		}
		shift := d * digitBits
		for _, k := range keys {
			b := (k >> shift) & (buckets - 1)
			tmp[c[b]] = k
			c[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys, true
}

// orderedBits maps a float (not NaN) to an integer with the same order:
// a non-negative float's bits with the sign bit set, a negative one's
// bits inverted.
func orderedBits(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// fromOrderedBits inverts orderedBits.
func fromOrderedBits(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
