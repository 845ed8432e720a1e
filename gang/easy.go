package gang

import (
	"cmp"
	"slices"
	"time"
)

// easy implements fcfs (noBackfill), EASY backfilling, and EASY with
// shortest-estimate-first backfill order. All three first start queued jobs
// in arrival order while the head fits in some row; EASY then backfills
// behind the head.
//
// With MPL > 1 the rules are judged per row: the head's reservation is in
// the row whose shadow time is earliest, a backfill candidate placed in that
// row must not delay it (ends by the shadow time or uses only that row's
// extra processors), and a candidate placed in another row does not affect
// it. Rows are tried in order.
type easy struct {
	noBackfill    bool
	shortestFirst bool
	candidates    []*jobState // scratch for the shortest-first order
	// reference makes backfill walk as it did before its short cuts (the
	// reservation computed first, every candidate tried in every row):
	// only the test that checks they decide the same sets it.
	reference bool
}

func (p *easy) submitted(*Scheduler, *jobState)           {}
func (p *easy) removed(*Scheduler, *jobState, bool, bool) {}
func (p *easy) started(*Scheduler, *jobState)             {}
func (p *easy) settle(*Scheduler)                         {}
func (p *easy) capacityChanged(*Scheduler)                {}

func (p *easy) wakeup(*Scheduler) (time.Duration, bool) { return 0, false }

func (p *easy) schedule(s *Scheduler) {
	q := s.runnable()
	aside := len(q) != len(s.queue) // some jobs wait for capacity
	n := 0
	for n < len(q) {
		j := q[n]
		r, ok := s.firstFit(j)
		if !ok {
			break
		}
		s.start(j, r, Explanation{Rule: RuleFits, Procs: j.Processors, Free: s.rows[r].cols.free})
		n++
	}
	q = q[n:]
	if aside {
		if n > 0 {
			s.compactQueue()
		}
	} else {
		s.dropHead(n) // the common case: the started jobs are the queue's prefix
		q = s.queue
	}
	if !p.noBackfill && len(q) > 1 && s.anyFree() {
		if p.backfill(s, q[0], q[1:]) {
			s.compactQueue()
		}
	}
}

// reservation returns the row where head is reserved (the earliest shadow
// time, then the lowest row), that shadow time, and the extra processors
// there.
func (p *easy) reservation(s *Scheduler, head *jobState) (row int, shadow time.Duration, extra int) {
	for r := range s.rows {
		at, ex := s.rows[r].shadow(head.Processors, s.rows[r].cols.free, s.now)
		if r == 0 || at < shadow {
			row, shadow, extra = r, at, ex
		}
	}
	return row, shadow, extra
}

// backfill starts the jobs behind head that fit now without delaying head's
// reservation. It reports whether it started any.
func (p *easy) backfill(s *Scheduler, head *jobState, rest []*jobState) bool {
	// The head's reservation (a walk over the running list) is computed at
	// the first candidate that fits a row, not before the walk: most passes
	// start nothing. Until a start nothing it reads has changed, so it is
	// the reservation computed first.
	resRow, shadow, extra, known := 0, time.Duration(0), 0, false
	if p.reference {
		resRow, shadow, extra = p.reservation(s, head)
		known = true
	}
	if p.shortestFirst {
		p.candidates = append(p.candidates[:0], rest...)
		slices.SortStableFunc(p.candidates, func(a, b *jobState) int { return cmp.Compare(a.Estimate, b.Estimate) })
		rest = p.candidates
		defer clear(p.candidates)
	}
	// most is the most free columns in any row, which only a start
	// changes: a candidate wider than that fits no row and is passed over
	// at one comparison, not a look at each row (most of a long queue is
	// passed over). None free is anyFree's false.
	// TestBackfillShortCutsSameDecisions checks both short cuts.
	most := s.mostFree()
	started := false
	for _, j := range rest {
		if p.reference {
			if !s.anyFree() {
				break
			}
		} else if most == 0 {
			break
		} else if j.Processors > most {
			continue
		}
		for r := range s.rows {
			if !s.fits(j, r) {
				continue
			}
			if !known {
				resRow, shadow, extra = p.reservation(s, head)
				known = true
			}
			// The explanation is built only for a job that starts: most
			// candidates of a long queue do not.
			rule, ex := RuleFits, extra
			if r == resRow {
				switch {
				case s.now+s.span(j) <= shadow:
					rule = RuleBackfillShadow
				case j.Processors <= extra:
					rule = RuleBackfillExtra
					extra -= j.Processors
				default:
					continue
				}
			}
			s.start(j, r, Explanation{Rule: rule, Procs: j.Processors, Free: s.rows[r].cols.free, At: shadow, Head: head.ID, Extra: ex})
			most = s.mostFree()
			started = true
			break
		}
	}
	return started
}

func (p *easy) explain(s *Scheduler, j *jobState) Explanation {
	head := s.runnable()[0] // j fits the capacity (Explain checked), so there is one
	resRow, shadow, extra := p.reservation(s, head)
	free := s.rows[resRow].cols.free
	memory := s.memoryBlocked(j)
	if j == head {
		if memory {
			return Explanation{Rule: RuleNoMemory, Procs: j.Processors}
		}
		return Explanation{Rule: RuleNoRoom, Procs: j.Processors, Free: free, At: shadow}
	}
	if p.noBackfill {
		return Explanation{Rule: RuleBehindHead, Head: head.ID, Procs: j.Processors, Free: free}
	}
	for r := range s.rows {
		if !s.fits(j, r) {
			continue
		}
		if r != resRow || s.now+s.span(j) <= shadow || j.Processors <= extra {
			// The state changed since the last pass: the next one starts it.
			return Explanation{Rule: RuleFits, Procs: j.Processors, Free: s.rows[r].cols.free}
		}
		return Explanation{Rule: RuleWouldDelayHead, Procs: j.Processors, Free: free, At: shadow, Extra: extra, Head: head.ID}
	}
	if memory {
		return Explanation{Rule: RuleNoMemory, Procs: j.Processors}
	}
	most := 0
	for r := range s.rows {
		most = max(most, s.rows[r].cols.free)
	}
	return Explanation{Rule: RuleTooFewFree, Procs: j.Processors, Free: most}
}
