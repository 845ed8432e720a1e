package gang

import (
	"slices"
	"time"
)

// easy implements fcfs (noBackfill), EASY backfilling, and EASY with
// shortest-estimate-first backfill order. All three first start queued jobs
// in arrival order while the head fits; EASY then backfills behind the head.
type easy struct {
	noBackfill    bool
	shortestFirst bool
	candidates    []*jobState // scratch for the shortest-first order
}

func (p *easy) submitted(*Scheduler, *jobState)           {}
func (p *easy) removed(*Scheduler, *jobState, bool, bool) {}
func (p *easy) started(*Scheduler, *jobState)             {}
func (p *easy) settle(*Scheduler)                         {}

func (p *easy) wakeup(*Scheduler) (time.Duration, bool) { return 0, false }

func (p *easy) schedule(s *Scheduler) {
	n := 0
	for n < len(s.queue) && s.queue[n].Processors <= s.free() {
		j := s.queue[n]
		s.start(j, Explanation{Rule: RuleFits, Procs: j.Processors, Free: s.free()})
		n++
	}
	s.dropHead(n)
	if !p.noBackfill && len(s.queue) > 1 && s.free() > 0 {
		if p.backfill(s, s.queue[0], s.queue[1:]) {
			s.compactQueue()
		}
	}
}

// backfill starts the jobs behind head that fit now without delaying head's
// reservation at the shadow time. It reports whether it started any.
func (p *easy) backfill(s *Scheduler, head *jobState, rest []*jobState) bool {
	shadow, extra := s.rows[0].shadow(head.Processors, s.free(), s.now)
	if p.shortestFirst {
		p.candidates = append(p.candidates[:0], rest...)
		slices.SortStableFunc(p.candidates, func(a, b *jobState) int {
			switch {
			case a.Estimate < b.Estimate:
				return -1
			case a.Estimate > b.Estimate:
				return 1
			}
			return 0
		})
		rest = p.candidates
		defer clear(p.candidates)
	}
	started := false
	for _, j := range rest {
		free := s.free()
		if free == 0 {
			break
		}
		if j.Processors > free {
			continue
		}
		why := Explanation{Procs: j.Processors, Free: free, At: shadow, Head: head.ID, Extra: extra}
		switch {
		case s.now+j.Estimate <= shadow:
			why.Rule = RuleBackfillShadow
		case j.Processors <= extra:
			why.Rule = RuleBackfillExtra
			extra -= j.Processors
		default:
			continue
		}
		s.start(j, why)
		started = true
	}
	return started
}

func (p *easy) explain(s *Scheduler, j *jobState) Explanation {
	head := s.queue[0]
	free := s.free()
	shadow, extra := s.rows[0].shadow(head.Processors, free, s.now)
	if j == head {
		return Explanation{Rule: RuleNoRoom, Procs: j.Processors, Free: free, At: shadow}
	}
	if p.noBackfill {
		return Explanation{Rule: RuleBehindHead, Head: head.ID, Procs: j.Processors, Free: free}
	}
	if j.Processors > free {
		return Explanation{Rule: RuleTooFewFree, Procs: j.Processors, Free: free}
	}
	if s.now+j.Estimate > shadow && j.Processors > extra {
		return Explanation{Rule: RuleWouldDelayHead, Procs: j.Processors, Free: free, At: shadow, Extra: extra, Head: head.ID}
	}
	// The state changed since the last pass: the next one will start it.
	return Explanation{Rule: RuleFits, Procs: j.Processors, Free: free}
}
