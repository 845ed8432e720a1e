package metrics

import (
	"math"
	"math/bits"
	"slices"
)

// A whole-seconds summary's wait, response and execution are integers, so
// their Stat needs no sort: a float64 sum of integers is exact, in any
// order, while the sum of their magnitudes is at most 2^53 (every partial
// sum is then an integer float64 holds exactly), so the mean summed over
// the sorted values is the integer sum's; and median, 95th percentile and
// maximum need four order statistics and the largest value, which a
// selection finds in three passes over the values where a radix sort made
// six: one finds the least and largest, the sum and how many equal the
// least (the ranks among those are found); a histogram of logarithmic
// buckets above the least finds the buckets holding the other ranks; one
// more gathers those buckets' few values to sort them (a bucket of many
// is narrowed by a histogram of its range instead).

// exactSumBound is the largest sum of magnitudes for which every partial
// sum of integers is exact in a float64.
const exactSumBound = 1 << 53

// gatherMax is the most values a range's order statistics are found from
// by gathering and sorting them rather than by another histogram pass.
const gatherMax = 512

// intColumn is a column of integer values: value i is a[i] - b[i], or
// a[i] when b is nil (execution is response minus wait).
type intColumn struct {
	a, b []int32
}

// value returns value i.
func (x intColumn) value(i int) int64 {
	if x.b == nil {
		return int64(x.a[i])
	}
	return int64(x.a[i]) - int64(x.b[i])
}

// scanned is what a first pass over a column finds.
type scanned struct {
	lo, hi int64  // the least and largest values
	nLo    int    // how many equal lo
	sum    int64  // their sum
	abs    uint64 // the sum of their magnitudes
}

// scan passes over the values, of which there is at least one.
func (x intColumn) scan() scanned {
	lo, hi := x.value(0), x.value(0)
	nLo, sum, abs := 0, int64(0), uint64(0)
	// Two loops, not a test of b per value; the body, the same in both,
	// without a branch that the values decide at random (half a run's
	// waits are the least, 0).
	if x.b == nil {
		for _, v := range x.a {
			v := int64(v)
			if v < lo {
				lo, nLo = v, 0
			}
			hi = max(hi, v)
			nLo += b2i(v == lo)
			sum += v
			m := v >> 63
			abs += uint64((v ^ m) - m)
		}
	} else {
		b := x.b[:len(x.a)]
		for i, v := range x.a {
			v := int64(v) - int64(b[i])
			if v < lo {
				lo, nLo = v, 0
			}
			hi = max(hi, v)
			nLo += b2i(v == lo)
			sum += v
			m := v >> 63
			abs += uint64((v ^ m) - m)
		}
	}
	return scanned{lo: lo, hi: hi, nLo: nLo, sum: sum, abs: abs}
}

// b2i is 1 if b, else 0.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The histograms count the values in [lo, hi] by bucket in
// count[:buckets]; they count the others too, beyond, in four slots taken
// in turn. A test of the range that skipped them mispredicted on values
// in and out of it at random (half a run's waits are 0, out of the range
// once the least value's ranks are known), and one slot would be a chain
// of increments, each waiting for the last.

// histogram counts the values in [lo, hi] by (v-lo)>>shift.
func (x intColumn) histogram(lo, hi int64, shift uint, count *[buckets + 4]int32) {
	*count = [buckets + 4]int32{}
	// One unsigned comparison tests lo <= v <= hi.
	span := uint64(hi - lo)
	if x.b == nil {
		for i, v := range x.a {
			d := uint64(int64(v) - lo)
			b := d >> shift
			if d > span {
				b = buckets + uint64(i&3)
			}
			count[b]++
		}
		return
	}
	b := x.b[:len(x.a)]
	for i, v := range x.a {
		d := uint64(int64(v) - int64(b[i]) - lo)
		k := d >> shift
		if d > span {
			k = buckets + uint64(i&3)
		}
		count[k]++
	}
}

// logBucket is the bucket of d among logBuckets, by its magnitude: d
// itself below 64, else its bit length and the 5 bits below its top one
// (a bucket spans 1/32 to 1/64 of its values). Metrics' values crowd near
// their least (short waits), where these buckets are narrow, and thin out
// above, where they are wide.
func logBucket(d uint64) uint64 {
	s := uint(max(bits.Len64(d)-6, 0))
	return uint64(s)<<5 + d>>s
}

// logBuckets is the number of logBucket's buckets of a uint64.
const logBuckets = (64-6)<<5 + 64

// logBounds returns the least and largest d of logBucket b.
func logBounds(b int) (lo, hi uint64) {
	s := uint(max(b>>5-1, 0))
	lo = uint64(b-int(s)<<5) << s
	return lo, lo + (1<<s - 1)
}

// logHistogram counts the values in [lo, hi] by logBucket(v-lo).
func (x intColumn) logHistogram(lo, hi int64, count *[buckets + 4]int32) {
	*count = [buckets + 4]int32{}
	span := uint64(hi - lo)
	if x.b == nil {
		for i, v := range x.a {
			d := uint64(int64(v) - lo)
			b := logBucket(d)
			if d > span {
				b = buckets + uint64(i&3)
			}
			count[b]++
		}
		return
	}
	b := x.b[:len(x.a)]
	for i, v := range x.a {
		d := uint64(int64(v) - int64(b[i]) - lo)
		k := logBucket(d)
		if d > span {
			k = buckets + uint64(i&3)
		}
		count[k]++
	}
}

// gather appends the values in either of two ranges, [lo1, lo1+n1) and
// [lo2, lo2+n2), to buf: one pass for the few values of the buckets the
// median's and the 95th percentile's ranks fall in.
func (x intColumn) gather(lo1, n1, lo2, n2 int64, buf []int64) []int64 {
	if x.b == nil {
		for _, v := range x.a {
			if v := int64(v); uint64(v-lo1) < uint64(n1) || uint64(v-lo2) < uint64(n2) {
				buf = append(buf, v)
			}
		}
		return buf
	}
	b := x.b[:len(x.a)]
	for i, v := range x.a {
		if v := int64(v) - int64(b[i]); uint64(v-lo1) < uint64(n1) || uint64(v-lo2) < uint64(n2) {
			buf = append(buf, v)
		}
	}
	return buf
}

// selector finds order statistics of an intColumn, with scratch reused
// from one column to the next.
type selector struct {
	count  *[buckets + 4]int32 // see histogram
	gather []int64
}

// part is a bucket of values holding some of the ranks sought.
type part struct {
	lo, hi     int64 // its values' range
	below, cnt int   // the values below it, and in it
	first, end int   // its ranks: ranks[first:end]
}

// findParts returns the buckets of count holding the ranks (in
// increasing order; below values are below bucket 0), and how many there
// are; bounds(b) is bucket b's range.
func findParts(count []int32, below int, ranks []int, bounds func(b int) (lo, hi int64)) ([maxRanks]part, int) {
	var parts [maxRanks]part
	np := 0
	cum, j := below, 0
	for b, c := range count {
		if j == len(ranks) {
			break
		}
		if ranks[j] >= cum+int(c) {
			cum += int(c)
			continue
		}
		p := part{below: cum, cnt: int(c), first: j}
		p.lo, p.hi = bounds(b)
		for j < len(ranks) && ranks[j] < cum+int(c) {
			j++
		}
		p.end = j
		parts[np] = p
		np++
		cum += int(c)
	}
	return parts, np
}

// resolve sets out[j] to the value of rank ranks[j] for the ranks of each
// part: a part of one value is that value; the values of the parts of few
// are gathered, two parts a pass, and sorted; the others are narrowed by
// orderStats.
func (s *selector) resolve(x intColumn, parts []part, ranks []int, out []int64) {
	var few [maxRanks]part
	nf := 0
	for _, p := range parts {
		r, o := ranks[p.first:p.end], out[p.first:p.end]
		switch {
		case p.lo == p.hi:
			for k := range o {
				o[k] = p.lo
			}
		case p.cnt <= gatherMax:
			few[nf] = p
			nf++
		default:
			s.orderStats(x, p.lo, p.hi, p.below, r, o)
		}
	}
	if nf == 0 {
		return
	}
	s.gather = s.gather[:0]
	for k := 0; k < nf; k += 2 { // two parts a pass
		p := few[k]
		lo2, n2 := int64(0), int64(0) // none
		if k+1 < nf {
			lo2, n2 = few[k+1].lo, few[k+1].hi-few[k+1].lo+1
		}
		s.gather = x.gather(p.lo, p.hi-p.lo+1, lo2, n2, s.gather)
	}
	slices.Sort(s.gather)
	// The parts' ranges do not overlap: each part's values follow the
	// earlier parts' in the sorted gathering.
	off := 0
	for _, p := range few[:nf] {
		for k, rank := range ranks[p.first:p.end] {
			out[p.first+k] = s.gather[off+rank-p.below]
		}
		off += p.cnt
	}
}

// orderStats sets out[j] to the value of rank ranks[j] (0 the least; ranks
// in increasing order), every such value being within [lo, hi] (lo < hi)
// and below being the number of values below lo: by a histogram of
// 2048 equal buckets of the range.
func (s *selector) orderStats(x intColumn, lo, hi int64, below int, ranks []int, out []int64) {
	shift := uint(0)
	for uint64(hi-lo)>>shift >= buckets {
		shift++
	}
	x.histogram(lo, hi, shift, s.count)
	parts, np := findParts(s.count[:buckets], below, ranks, func(b int) (int64, int64) {
		blo := lo + int64(b)<<shift
		return blo, min(hi, blo+(1<<shift-1))
	})
	s.resolve(x, parts[:np], ranks, out)
}

// logOrderStats is orderStats by a histogram of logBucket's buckets of
// the values above lo: narrow where the values crowd.
func (s *selector) logOrderStats(x intColumn, lo, hi int64, below int, ranks []int, out []int64) {
	x.logHistogram(lo, hi, s.count)
	parts, np := findParts(s.count[:logBuckets], below, ranks, func(b int) (int64, int64) {
		dlo, dhi := logBounds(b)
		return lo + int64(dlo), lo + int64(min(dhi, uint64(hi-lo)))
	})
	s.resolve(x, parts[:np], ranks, out)
}

// maxRanks is the most ranks orderStats is asked for: the median's and
// the 95th percentile's lower and upper order statistics.
const maxRanks = 4

// statRanks returns the ranks of the n sorted values that sortedStat
// reads, in increasing order: quantile's lower and upper order statistics
// of the median and of the 95th percentile, then the last (the maximum).
func statRanks(n int) [maxRanks + 1]int {
	var r [maxRanks + 1]int
	for k, q := range []float64{0.5, 0.95} {
		// quantile reads the values at floor(h) and the next, or the last.
		lo := min(int(math.Floor(q*float64(n-1))), n-1)
		r[2*k], r[2*k+1] = lo, min(lo+1, n-1)
	}
	r[maxRanks] = n - 1
	slices.Sort(r[:]) // for few values the median's upper rank passes the 95th's lower
	return r
}

// wholeStat is the Stat of the n > 0 integer values of x, as statKeys
// would give it; ok is false when their sum may not be exact in a
// float64 (the sort then gives the mean).
func (s *selector) wholeStat(x intColumn) (st Stat, ok bool) {
	n := len(x.a)
	sc := x.scan()
	if sc.abs > exactSumBound {
		return Stat{}, false
	}
	ranks := statRanks(n)
	var vals [len(ranks)]int64
	// The last rank is n-1's, the maximum: hi. Ranks below nLo are the
	// least value's; the others are sought above it, whose histogram the
	// many values equal to it (waits of 0) then do not slow.
	r := ranks[:maxRanks]
	k := 0
	for k < len(r) && r[k] < sc.nLo {
		vals[k] = sc.lo
		k++
	}
	if k < len(r) {
		if s.count == nil {
			s.count = new([buckets + 4]int32)
		}
		s.logOrderStats(x, sc.lo+1, sc.hi, sc.nLo, r[k:], vals[k:maxRanks])
	}
	vals[maxRanks] = sc.hi
	at := func(i int) float64 {
		for k, r := range ranks {
			if r == i {
				return float64(vals[k])
			}
		}
		panic("metrics: an order statistic that was not selected")
	}
	return sortedStat(n, float64(sc.sum), at), true
}
