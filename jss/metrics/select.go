package metrics

import (
	"math"
	"slices"
)

// A whole-seconds summary's wait, response and execution are integers, so
// their Stat needs no sort: a float64 sum of integers is exact, in any
// order, while the sum of their magnitudes is at most 2^53 (every partial
// sum is then an integer float64 holds exactly), so the mean summed over
// the sorted values is the integer sum's; and median, 95th percentile and
// maximum need four order statistics and the largest value, which a
// selection finds in a few passes over the values (a histogram of
// value ranges, narrowed to the ranges holding the ranks wanted) where a
// radix sort made six.

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

// scan returns the least and largest values, their sum and the sum of
// their magnitudes. There is at least one value.
func (x intColumn) scan() (lo, hi, sum int64, abs uint64) {
	lo, hi = x.value(0), x.value(0)
	visit := func(v int64) {
		lo, hi = min(lo, v), max(hi, v)
		sum += v
		if v < 0 {
			abs += uint64(-v)
		} else {
			abs += uint64(v)
		}
	}
	// Two loops, not a test of b per value.
	if x.b == nil {
		for _, v := range x.a {
			visit(int64(v))
		}
	} else {
		b := x.b[:len(x.a)]
		for i, v := range x.a {
			visit(int64(v) - int64(b[i]))
		}
	}
	return lo, hi, sum, abs
}

// histogram counts the values in [lo, hi] by (v-lo)>>shift.
func (x intColumn) histogram(lo, hi int64, shift uint, count *[buckets]int32) {
	*count = [buckets]int32{}
	// One unsigned comparison tests lo <= v <= hi.
	span := uint64(hi - lo)
	if x.b == nil {
		for _, v := range x.a {
			if d := uint64(int64(v) - lo); d <= span {
				count[(d>>shift)&(buckets-1)]++
			}
		}
		return
	}
	b := x.b[:len(x.a)]
	for i, v := range x.a {
		if d := uint64(int64(v) - int64(b[i]) - lo); d <= span {
			count[(d>>shift)&(buckets-1)]++
		}
	}
}

// gather appends the values in [lo, hi] to buf.
func (x intColumn) gather(lo, hi int64, buf []int64) []int64 {
	span := uint64(hi - lo)
	if x.b == nil {
		for _, v := range x.a {
			if uint64(int64(v)-lo) <= span {
				buf = append(buf, int64(v))
			}
		}
		return buf
	}
	b := x.b[:len(x.a)]
	for i, v := range x.a {
		if v := int64(v) - int64(b[i]); uint64(v-lo) <= span {
			buf = append(buf, v)
		}
	}
	return buf
}

// selector finds order statistics of an intColumn, with scratch reused
// from one column to the next.
type selector struct {
	count  *[buckets]int32
	gather []int64
}

// orderStats sets out[j] to the value of rank ranks[j] (0 the least; ranks
// in increasing order), every such value being within [lo, hi] and below
// being the number of values below lo.
func (s *selector) orderStats(x intColumn, lo, hi int64, below int, ranks []int, out []int64) {
	if lo == hi {
		for j := range out {
			out[j] = lo
		}
		return
	}
	shift := uint(0)
	for uint64(hi-lo)>>shift >= buckets {
		shift++
	}
	if s.count == nil {
		s.count = new([buckets]int32)
	}
	x.histogram(lo, hi, shift, s.count)
	// The buckets holding the ranks, found before any of them is narrowed
	// (which reuses the counts).
	type part struct {
		bucket     int64
		below, cnt int // values below the bucket, and in it
		first, end int // its ranks: ranks[first:end]
	}
	var parts [maxRanks]part
	np := 0
	cum, j := below, 0
	for b, c := range s.count {
		if j == len(ranks) {
			break
		}
		if ranks[j] >= cum+int(c) {
			cum += int(c)
			continue
		}
		p := part{bucket: int64(b), below: cum, cnt: int(c), first: j}
		for j < len(ranks) && ranks[j] < cum+int(c) {
			j++
		}
		p.end = j
		parts[np] = p
		np++
		cum += int(c)
	}
	for _, p := range parts[:np] {
		blo := lo + p.bucket<<shift
		bhi := min(hi, blo+(1<<shift-1))
		r, o := ranks[p.first:p.end], out[p.first:p.end]
		if shift == 0 || p.cnt > gatherMax {
			s.orderStats(x, blo, bhi, p.below, r, o)
			continue
		}
		s.gather = x.gather(blo, bhi, s.gather[:0])
		slices.Sort(s.gather)
		for k, rank := range r {
			o[k] = s.gather[rank-p.below]
		}
	}
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
	lo, hi, sum, abs := x.scan()
	if abs > exactSumBound {
		return Stat{}, false
	}
	ranks := statRanks(n)
	var vals [len(ranks)]int64
	// The last rank is n-1's, the maximum: hi.
	s.orderStats(x, lo, hi, 0, ranks[:maxRanks], vals[:maxRanks])
	vals[maxRanks] = hi
	at := func(i int) float64 {
		for k, r := range ranks {
			if r == i {
				return float64(vals[k])
			}
		}
		panic("metrics: an order statistic that was not selected")
	}
	return sortedStat(n, float64(sum), at), true
}
