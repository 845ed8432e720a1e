package metrics

import (
	"math"
	"math/bits"
	"slices"
)

// sorter sorts float64s as slices.Sort does, by a radix sort of their bits
// (msd64 for 64-bit keys, radix32 for 32-bit ones): the summary sorts the
// slowdowns of a whole run (see slowdownStats; its integer metrics are
// selected, see select.go), the runtime bins every metric of their jobs,
// and comparison sorts of tens of thousands of values took a tenth of a
// simulation. Its buffer is reused from one sort to the next.
//
// Its keys (see keys.put) are kept as two halves, the high and the low 32
// bits, so that what a summary's values do not need costs no memory, and
// fresh memory is what a short simulation pays most for:
//   - values that are exactly 1 (most slowdowns: every job that did not
//     wait) are counted, not sorted: they go between the values below 1
//     and those above;
//   - when every low half is zero (whole numbers below 2^21: a simulated
//     trace's waits and responses in seconds), only the high halves are
//     sorted, 4 bytes a value, not 8.
//
// The result is the order of slices.Sort, bit for bit: the bits of two
// floats compare as the floats do once mapped as below, except for NaN and
// negative zero (equal to zero but not the same bits), so values with
// either are sorted by slices.Sort itself. Means summed over the sorted
// values therefore do not change in their last bit.
type sorter struct {
	buf []uint32
	tmp []uint32 // msd64's scratch when buf has no room for it
	// count holds per digit the buckets' counts, then their offsets. On
	// the heap, allocated with the keys: as an array in the struct it made
	// the summary's frame 49 KB, and the goroutine's stack grew (copied
	// into fresh memory at each doubling) to hold it.
	count *[digits][buckets]int32
}

// radixMin is the length below which slices.Sort is faster.
const radixMin = 256

// Digits of 11 bits, each with a count table that fits in the first-level
// cache: three passes for 32-bit keys; six levels at most of msd64's for
// 64-bit ones.
const (
	digitBits = 11
	digits    = (64 + digitBits - 1) / digitBits
	digits32  = (32 + digitBits - 1) / digitBits
	buckets   = 1 << digitBits
)

// oneKey is the key of 1.
const oneKey = 0xbff0000000000000

// keys receives the keys of a sort's values: fill functions call put for
// each value.
type keys struct {
	hi, lo []uint32
	m      int    // keys written (the values that are not 1)
	ones   int    // values equal to 1
	loOr   uint32 // the low halves ORed together
	bad    bool   // a NaN or negative zero was met
}

// put adds the value whose bits (math.Float64bits) are b.
func (k *keys) put(b uint64) {
	if b&^(1<<63) > 0x7ff0000000000000 || b == 1<<63 { // NaN, or -0
		k.bad = true
		return
	}
	// The key: a non-negative float's bits with the sign bit set, a
	// negative one's bits inverted; keys compare as the floats do.
	key := b | 1<<63
	if b>>63 != 0 {
		key = ^b
	}
	// Written whether it is 1's or not, and counted without a branch:
	// about half of a run's slowdowns are 1, in no order a branch could
	// predict. (1's key written is overwritten by the next, or left
	// beyond the m written; its low half is zero, so loOr keeps.)
	d := key ^ oneKey
	notOne := int((d | -d) >> 63)
	k.hi[k.m], k.lo[k.m] = uint32(key>>32), uint32(key)
	k.loOr |= uint32(key)
	k.m += notOne
	k.ones += 1 - notOne
}

// sort sorts x in increasing order.
func (s *sorter) sort(x []float64) {
	if len(x) < radixMin || len(x) > math.MaxInt32/4 {
		slices.Sort(x)
		return
	}
	seq, ok := s.sorted(len(x), func(k *keys) {
		for _, v := range x {
			k.put(math.Float64bits(v))
		}
	})
	if !ok {
		slices.Sort(x)
		return
	}
	for i := range x {
		x[i] = seq.at(i)
	}
}

// stat summarises the n values v(i), n > 0: statKeys, one call of v a
// value.
func (s *sorter) stat(n int, v func(i int) float64) Stat {
	return s.statKeys(n, func(k *keys) {
		for i := range n {
			k.put(math.Float64bits(v(i)))
		}
	}, v)
}

// statKeys summarises n values, n > 0: the mean (summed over the sorted
// values), median, 95th percentile and maximum. fill gives every value's
// bits to its keys' put, in one loop of the caller's (not a call of a
// function value per value); v(i) is value i, for the values radix
// sorting does not take.
func (s *sorter) statKeys(n int, fill func(k *keys), v func(i int) float64) Stat {
	if n >= radixMin && n <= math.MaxInt32/4 {
		if seq, ok := s.sorted(n, fill); ok {
			return seq.stat()
		}
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = v(i)
	}
	slices.Sort(x)
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	return sortedStat(n, sum, func(i int) float64 { return x[i] })
}

// addOnes returns sum with c ones added one by one, as a sorted sum adds
// them. When sum is a whole number and so is every partial sum up to
// sum+c, below 2^53 in magnitude, each addition is exact and so is their
// total's: one addition (there is no value below 1 before a slowdown's
// ones, and sum is 0).
func addOnes(sum float64, c int) float64 {
	if c == 0 {
		return sum // -0 stays
	}
	if sum == math.Trunc(sum) && math.Abs(sum)+float64(c) < 1<<53 {
		return sum + float64(c)
	}
	for range c {
		sum++
	}
	return sum
}

// stat is the Stat of the sequence's values (its 1's included).
func (q *sequence) stat() Stat {
	sum := 0.0
	for i := range q.p {
		sum += q.value(i)
	}
	sum = addOnes(sum, q.ones)
	for i := q.p; i < q.m; i++ {
		sum += q.value(i)
	}
	return sortedStat(q.m+q.ones, sum, q.at)
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

// sequence is a sort's result: the m sorted keys other than 1's, the
// first p of them below 1, then ones values equal to 1 between them.
type sequence struct {
	hi, lo     []uint32 // lo nil: every low half is zero
	m, p, ones int
}

// key returns the i-th sorted key other than 1's.
func (q *sequence) key(i int) uint64 {
	k := uint64(q.hi[i]) << 32
	if q.lo != nil {
		k |= uint64(q.lo[i])
	}
	return k
}

// value returns the i-th sorted value other than 1.
func (q *sequence) value(i int) float64 {
	return fromOrderedBits(q.key(i))
}

// at returns the i-th value of the whole sorted sequence.
func (q *sequence) at(i int) float64 {
	switch {
	case i < q.p:
		return q.value(i)
	case i < q.p+q.ones:
		return 1
	}
	return q.value(i - q.ones)
}

// sorted sorts the n values fill gives (n <= MaxInt32/4). ok is false when
// the radix sort does not apply (a NaN or negative zero among them):
// slices.Sort's order is then the one to use.
func (s *sorter) sorted(n int, fill func(k *keys)) (q sequence, ok bool) {
	if cap(s.buf) < 2*n {
		s.buf = make([]uint32, 2*n)
	}
	w := s.buf[:cap(s.buf)]
	k := keys{hi: w[:n], lo: w[n : 2*n]}
	fill(&k)
	if k.bad {
		return sequence{}, false
	}
	m := k.m
	if s.count == nil && m > insertionMax { // fewer are sorted without it
		s.count = new([digits][buckets]int32)
	}
	q = sequence{m: m, ones: k.ones}
	if k.loOr == 0 {
		// 32-bit keys: the low halves' room is the scratch.
		q.hi = radix32(w[:m], w[m:2*m], s.count)
	} else {
		// The halves stay where fill wrote them; the scratch is what
		// follows each, if there is room (most keys were not 1's), else
		// memory of its own: no copy of the keys either way.
		q.hi, q.lo = w[:m], w[n:n+m]
		var tmpHi, tmpLo []uint32
		if 2*m <= n && n+2*m <= len(w) {
			tmpHi, tmpLo = w[m:2*m], w[n+m:n+2*m]
		} else {
			if cap(s.tmp) < 2*m {
				s.tmp = make([]uint32, 2*m)
			}
			tmpHi, tmpLo = s.tmp[:m], s.tmp[m:2*m]
		}
		msd64(q.hi, q.lo, tmpHi, tmpLo, s.count, 0)
	}
	// p: the keys below 1's, whose low half is zero.
	q.p, _ = slices.BinarySearch(q.hi, uint32(oneKey>>32))
	return q, true
}

// radix32 sorts keys, with tmp as scratch, and returns the sorted slice:
// keys or tmp.
func radix32(keys, tmp []uint32, count *[digits][buckets]int32) []uint32 {
	if len(keys) < radixMin {
		// A few keys (an execution slowdown's that are not 1): no count
		// table to clear for them.
		slices.Sort(keys)
		return keys
	}
	clear(count[:digits32]) // the rows it uses, not all (fresh memory)
	for _, k := range keys {
		for d := range digits32 {
			count[d][(k>>(d*digitBits))&(buckets-1)]++
		}
	}
	for d := range digits32 {
		c := &count[d]
		if int(c[(keys[0]>>(d*digitBits))&(buckets-1)]) == len(keys) {
			continue // every key has this digit: the pass would not move any
		}
		offsets(c)
		shift := d * digitBits
		for _, k := range keys {
			b := (k >> shift) & (buckets - 1)
			tmp[c[b]] = k
			c[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// msd64 sorts the keys whose halves hi and lo hold, in place, with tmpHi
// and tmpLo as scratch: by their most significant digit (above the least
// key), then each bucket alone the same way, by insertion when small. It
// took half the time of a least-significant-digit radix sort's six
// scatters of every key into 2048 buckets, on a summary's slowdowns (about
// 13,000 keys: a few per bucket of each digit). count[depth] holds its
// counts (a bucket sorted alone uses the next row).
func msd64(hi, lo, tmpHi, tmpLo []uint32, count *[digits][buckets]int32, depth int) {
	n := len(hi)
	if n <= insertionMax {
		insertion64(hi, lo)
		return
	}
	lo, tmpHi, tmpLo = lo[:n], tmpHi[:n], tmpLo[:n]
	least, most := uint64(hi[0])<<32|uint64(lo[0]), uint64(0)
	for i := range hi {
		k := uint64(hi[i])<<32 | uint64(lo[i])
		least, most = min(least, k), max(most, k)
	}
	if least == most {
		return
	}
	// The digit: the top bits of the keys' span above the least, about a
	// bucket a key (up to 11 bits): counting, and going through, 2048
	// buckets for a few dozen keys cost more than sorting them. But never
	// so few that the buckets' spans would need more rows of count than
	// are left (each can narrow them by 11 bits).
	span := bits.Len64(most - least)
	width := min(max(bits.Len(uint(n)), 3, span-digitBits*(digits-1-depth)), digitBits)
	shift := uint(max(span-width, 0))
	c := count[depth][:1<<width]
	clear(c)
	mask := uint64(len(c) - 1)
	for i := range hi {
		k := uint64(hi[i])<<32 | uint64(lo[i])
		c[((k-least)>>shift)&mask]++
	}
	sum := int32(0)
	for b := range c {
		c[b], sum = sum, sum+c[b]
	}
	for i := range hi {
		h, l := hi[i], lo[i]
		b := (((uint64(h)<<32 | uint64(l)) - least) >> shift) & mask
		tmpHi[c[b]], tmpLo[c[b]] = h, l
		c[b]++
	}
	copy(hi, tmpHi)
	copy(lo, tmpLo)
	if shift == 0 {
		return // a bucket a key
	}
	start := int32(0)
	for _, end := range c { // c[b] is now bucket b's end
		if end-start > 1 {
			msd64(hi[start:end], lo[start:end], tmpHi[start:end], tmpLo[start:end], count, depth+1)
		}
		start = end
	}
}

// insertionMax is the most keys msd64 sorts by insertion.
const insertionMax = 16

// insertion64 sorts the keys whose halves hi and lo hold, by insertion.
func insertion64(hi, lo []uint32) {
	lo = lo[:len(hi)]
	for i := 1; i < len(hi); i++ {
		h, l := hi[i], lo[i]
		k := uint64(h)<<32 | uint64(l)
		j := i
		for ; j > 0 && uint64(hi[j-1])<<32|uint64(lo[j-1]) > k; j-- {
			hi[j], lo[j] = hi[j-1], lo[j-1]
		}
		hi[j], lo[j] = h, l
	}
}

// offsets turns a digit's bucket counts into the buckets' first slots.
func offsets(c *[buckets]int32) {
	sum := int32(0)
	for b := range c {
		c[b], sum = sum, sum+c[b]
	}
}

// fromOrderedBits returns the float of a key (see keys.put).
func fromOrderedBits(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
