package metrics

import "math"

// A job whose runtime is at least max(1 s, τ) has the same slowdown and
// bounded slowdown, bit for bit: both divide its response by its runtime.
// Most jobs are such (all but a twentieth of KTH's), so the two metrics
// share one sort of those jobs' values; each then sorts the few other
// jobs' values alone and merges them in. A merge gives the order of a
// sort of all the values, so the means (summed in that order) do not
// change in their last bit.

// fillLong gives k the slowdowns of the jobs whose runtime is at least
// floor (the bounded slowdowns are the same), and appends the others'
// indices to short, which it returns: one pass over the jobs for both.
func fillLong[T int32 | float64](k *keys, resp, run []T, floor float64, short []int32) []int32 {
	resp = resp[:len(run)]
	for i, r := range run {
		if float64(r) >= floor {
			k.put(math.Float64bits(slowdown(float64(resp[i]), float64(r))))
		} else {
			short = append(short, int32(i))
		}
	}
	return short
}

// fillShort gives k the slowdowns (bounded ones, with threshold tau, if
// bounded) of the jobs whose indices short lists.
func fillShort[T int32 | float64](k *keys, resp, run []T, short []int32, tau float64, bounded bool) {
	for _, i := range short {
		if bounded {
			k.put(math.Float64bits(boundedSlowdown(float64(resp[i]), float64(run[i]), tau)))
		} else {
			k.put(math.Float64bits(slowdown(float64(resp[i]), float64(run[i]))))
		}
	}
}

// slowdownStats returns the Stats of the slowdown and of the bounded
// slowdown, as stat would: sc's sorter sorts the long jobs' values, and
// its two others the short jobs' of each metric.
func (c *Collector) slowdownStats(sc *scratch) (sd, bsd Stat) {
	if c.n > math.MaxInt32/4 {
		return c.stat(&sc.so, mSlowdown), c.stat(&sc.so, mBoundedSlowdown)
	}
	tau := c.tau.Seconds()
	floor := max(SlowdownTau.Seconds(), tau)
	short := sc.shortJobs[:0]
	fill := func(k *keys) {
		if c.whole {
			short = fillLong(k, c.resp32, c.run32[:c.n], floor, short)
		} else {
			short = fillLong(k, c.resp, c.run[:c.n], floor, short)
		}
	}
	fillShorts := func(bounded bool) func(k *keys) {
		return func(k *keys) {
			if c.whole {
				fillShort(k, c.resp32, c.run32, short, tau, bounded)
			} else {
				fillShort(k, c.resp, c.run, short, tau, bounded)
			}
		}
	}
	l, ok1 := sc.so.sorted(c.n, fill) // c.n: room for all, as the long are not yet counted
	sc.shortJobs = short
	// The short jobs' sorts come after the long ones': one count table
	// for the three (fresh memory).
	sc.short.count, sc.shortBounded.count = sc.so.count, sc.so.count
	s, ok2 := sc.short.sorted(len(short), fillShorts(false))
	sb, ok3 := sc.shortBounded.sorted(len(short), fillShorts(true))
	if !ok1 || !ok2 || !ok3 {
		// A NaN or negative zero among them: slices.Sort's order.
		return c.stat(&sc.so, mSlowdown), c.stat(&sc.so, mBoundedSlowdown)
	}
	return mergedStats(c.n, &l, &s, &sb)
}

// mergedStats returns the Stats of the n values of the sorted sequences l
// and x together and of l and y together: each sum added in its merged
// order, the values at the ranks the quantiles need kept as they pass.
// One pass over l serves both (it holds most of the values).
func mergedStats(n int, l, x, y *sequence) (Stat, Stat) {
	mx, my := newMerger(n), newMerger(n)
	merge2(l, 0, l.p, &mx, x, 0, x.p, &my, y, 0, y.p)
	mx.takeOnes(l.ones + x.ones)
	my.takeOnes(l.ones + y.ones)
	merge2(l, l.p, l.m, &mx, x, x.p, x.m, &my, y, y.p, y.m)
	return mx.stat(n), my.stat(n)
}

// merger adds up values in order and keeps those of some ranks.
type merger struct {
	sum   float64
	rank  int // the next value's
	ranks [maxRanks + 1]int
	vals  [maxRanks + 1]float64
	kept  int // ranks whose values are kept
	want  int // ranks[kept], or -1 once every one is kept
}

// newMerger returns a merger keeping the values sortedStat reads of n.
func newMerger(n int) merger {
	m := merger{ranks: statRanks(n)}
	m.want = m.ranks[0]
	return m
}

// stat is the Stat of the n values taken.
func (m *merger) stat(n int) Stat {
	return sortedStat(n, m.sum, func(i int) float64 {
		for k, r := range m.ranks {
			if r == i {
				return m.vals[k]
			}
		}
		panic("metrics: an order statistic that was not kept")
	})
}

// take adds v, the value of the next rank.
func (m *merger) take(v float64) {
	m.sum += v
	if m.rank == m.want {
		m.keep(v)
	}
	m.rank++
}

// takeOnes takes c values equal to 1.
func (m *merger) takeOnes(c int) {
	m.sum = addOnes(m.sum, c)
	end := m.rank + c
	for m.want >= 0 && m.want < end {
		m.rank = m.want
		m.keep(1)
	}
	m.rank = end
}

// keep keeps v as the value of the wanted rank (and of its repeats).
func (m *merger) keep(v float64) {
	for m.kept < len(m.ranks) && m.ranks[m.kept] == m.rank {
		m.vals[m.kept] = v
		m.kept++
	}
	m.want = -1
	if m.kept < len(m.ranks) {
		m.want = m.ranks[m.kept]
	}
}

// merge2 takes l's keys [i, iEnd) into mx and my, x's [jx, xEnd) into mx
// and y's [jy, yEnd) into my, each merger's in order: one pass over l,
// which holds most of the values, for both.
func merge2(l *sequence, i, iEnd int, mx *merger, x *sequence, jx, xEnd int, my *merger, y *sequence, jy, yEnd int) {
	// head returns the key at j of s, or once j is at end the largest
	// uint64, above every key of l (it would be a NaN's).
	head := func(s *sequence, j, end int) uint64 {
		if j < end {
			return s.key(j)
		}
		return math.MaxUint64
	}
	hx, hy := head(x, jx, xEnd), head(y, jy, yEnd)
	for ; i < iEnd; i++ {
		k := l.key(i)
		for hx < k {
			mx.take(fromOrderedBits(hx))
			jx++
			hx = head(x, jx, xEnd)
		}
		for hy < k {
			my.take(fromOrderedBits(hy))
			jy++
			hy = head(y, jy, yEnd)
		}
		v := fromOrderedBits(k)
		mx.sum += v
		my.sum += v
		if mx.rank == mx.want {
			mx.keep(v)
		}
		if my.rank == my.want {
			my.keep(v)
		}
		mx.rank++
		my.rank++
	}
	for ; jx < xEnd; jx++ {
		mx.take(fromOrderedBits(x.key(jx)))
	}
	for ; jy < yEnd; jy++ {
		my.take(fromOrderedBits(y.key(jy)))
	}
}
