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
	if len(x) < radixMin || len(x) > math.MaxInt32 {
		slices.Sort(x)
		return
	}
	keys := s.buffer(len(x))
	for i, v := range x {
		keys[i] = math.Float64bits(v)
	}
	sorted, ok := s.sortBits(keys)
	if !ok {
		slices.Sort(x)
		return
	}
	for i, k := range sorted {
		x[i] = fromOrderedBits(k)
	}
}

// stat summarises the n values v(i), n > 0: statBits, one call of v a
// value.
func (s *sorter) stat(n int, v func(i int) float64) Stat {
	return s.statBits(n, func(b []uint64) {
		for i := range b {
			b[i] = math.Float64bits(v(i))
		}
	})
}

// statBits summarises n values, n > 0, whose bits (math.Float64bits)
// fill writes into the slice of n it is given: the mean (summed over the
// sorted values), median, 95th percentile and maximum. The values are
// sorted in the sorter's own buffers: no copy of them is made (for the
// summary's six metrics of every job, one array fewer to fault in), and
// fill is one loop of the caller's, not a call per value.
func (s *sorter) statBits(n int, fill func(b []uint64)) Stat {
	var keys []uint64
	if n >= radixMin && n <= math.MaxInt32 {
		keys = s.buffer(n)
	} else {
		keys = make([]uint64, n)
	}
	fill(keys)
	if n >= radixMin && n <= math.MaxInt32 {
		if sorted, ok := s.sortBits(keys); ok {
			sum := 0.0
			for _, k := range sorted {
				sum += fromOrderedBits(k)
			}
			return sortedStat(n, sum, func(i int) float64 { return fromOrderedBits(sorted[i]) })
		}
	}
	x := make([]float64, n)
	for i, b := range keys {
		x[i] = math.Float64frombits(b)
	}
	slices.Sort(x)
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	return sortedStat(n, sum, func(i int) float64 { return x[i] })
}

// sortedStat is the Stat of the n sorted values at(i) that sum to sum
// (added in order).
func sortedStat(n int, sum float64, at func(i int) float64) Stat {
	return Stat{
		Mean:   sum / float64(n),
		Median: quantile(n, at, 0.5),
		P95:    quantile(n, at, 0.95),
		Max:    at(n - 1),
	}
}

// buffer returns the sorter's key buffer for n values.
func (s *sorter) buffer(n int) []uint64 {
	if cap(s.keys) < n {
		s.keys, s.tmp = make([]uint64, n), make([]uint64, n)
	}
	return s.keys[:n]
}

// sortBits sorts the floats whose bits b holds (the sorter's buffer) and
// returns their keys (orderedBits) in increasing order, in b or the
// sorter's other buffer. ok is false, with b as it was, when the radix
// sort does not apply (a NaN or negative zero among them): slices.Sort's
// order is then the one to use.
func (s *sorter) sortBits(b []uint64) (sorted []uint64, ok bool) {
	n := len(b)
	if s.count == nil {
		s.count = new([digits][buckets]int32)
	}
	keys, tmp := b, s.tmp[:n]
	count := s.count
	*count = [digits][buckets]int32{}
	for i, bits := range keys {
		if bits&^(1<<63) > 0x7ff0000000000000 || bits == 1<<63 { // NaN, or -0
			for j := range i {
				keys[j] = math.Float64bits(fromOrderedBits(keys[j]))
			}
			return nil, false
		}
		k := orderedBits(math.Float64frombits(bits))
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
