package gang

import "time"

// conservative implements conservative backfilling: every queued job holds
// a reservation in an availability profile, placed in arrival order at the
// earliest time it fits; jobs start when their reservation is reached.
// With MPL > 1 each row has its own profile and a job is reserved in the
// row where it can start earliest (then the lowest row). Reservations count
// processors; memory is checked when a job starts (job access control).
type conservative struct {
	profs []Profile // one per row
	// stale is set when processors were released (a job ended, or a queued
	// job left) and reservations await compression. Compression runs once,
	// before the next placement, pass or query, so the outcome does not
	// depend on the order in which jobs ending at one instant are reported.
	stale bool
}

func newConservative(processors, rows int) *conservative {
	p := &conservative{profs: make([]Profile, rows)}
	for r := range p.profs {
		p.profs[r] = NewProfile(0, processors, 0)
	}
	return p
}

func (p *conservative) advance(now time.Duration) {
	for r := range p.profs {
		p.profs[r].Advance(now)
	}
}

func (p *conservative) submitted(s *Scheduler, j *jobState) {
	p.advance(s.now)
	// Jobs already queued are compressed before the newcomer is placed, so
	// it cannot take a slot an older job is entitled to.
	p.compress(s, j)
	p.reserve(s, j)
}

// never marks a job with no reservation: it is wider than the columns in
// service and waits, without a slot, until enough come back.
const never = time.Duration(1<<63 - 1)

// reserve places j at the earliest time it fits in any row.
func (p *conservative) reserve(s *Scheduler, j *jobState) {
	if j.Processors > s.online {
		j.resv, j.resvRow = never, 0
		return
	}
	span := s.span(j)
	for r := range p.profs {
		at := p.profs[r].Earliest(s.now, span, j.Processors, 0)
		if r == 0 || at < j.resv {
			j.resv, j.resvRow = at, r
		}
	}
	p.profs[j.resvRow].Add(j.resv, j.resv+span, -j.Processors, 0)
}

func (p *conservative) release(s *Scheduler, j *jobState) {
	if j.resv != never {
		p.profs[j.resvRow].Add(j.resv, j.resv+s.span(j), j.Processors, 0)
	}
}

func (p *conservative) removed(s *Scheduler, j *jobState, wasRunning, early bool) {
	p.advance(s.now)
	switch {
	case !wasRunning:
		p.release(s, j)
	case early:
		p.profs[j.row].Add(s.now, j.estEnd, j.Processors, 0)
	}
	// pyss compresses after every termination, even one on time: a previous
	// compression may have opened holes that earlier jobs can now use.
	p.stale = true
}

// compress moves every queued job (but skip, a job being submitted), in
// arrival order, to the earliest time it now fits, if anything was released
// since the last compression. A job's own old slot stays available to it,
// so none moves later.
func (p *conservative) compress(s *Scheduler, skip *jobState) {
	if !p.stale {
		return
	}
	p.stale = false
	for _, j := range s.queue {
		if j == skip || j.resv <= s.now {
			continue // due now: it starts in this pass (or waits for an overrun)
		}
		p.release(s, j)
		p.reserve(s, j)
	}
}

func (p *conservative) started(s *Scheduler, j *jobState) {
	if j.resv != s.now || j.resvRow != j.row {
		// A late start (a running job overran its estimate): move the
		// occupation from the reserved slot to the real one.
		p.release(s, j)
		p.profs[j.row].Add(s.now, s.now+s.span(j), -j.Processors, 0)
	}
	j.resv = -1
}

// capacityChanged rebuilds every profile for the columns now in service and
// re-reserves the queue in arrival order: capacity may have shrunk, so a
// reservation can move later (the guarantee holds for a fixed machine).
func (p *conservative) capacityChanged(s *Scheduler) {
	for r := range p.profs {
		p.profs[r] = NewProfile(0, s.Online(), 0)
		p.profs[r].Advance(s.now)
		for _, j := range s.rows[r].running {
			held := len(s.onlineOnly(j.cols))
			p.profs[r].Add(s.now, max(j.estEnd, s.now), -held, 0)
		}
	}
	p.stale = false
	for _, j := range s.queue {
		p.reserve(s, j)
	}
}

func (p *conservative) settle(s *Scheduler) {
	p.advance(s.now)
	p.compress(s, nil)
}

func (p *conservative) schedule(s *Scheduler) {
	p.settle(s)
	started := false
	for _, j := range s.queue {
		if j.resv > s.now {
			continue
		}
		if !s.fits(j, j.resvRow) {
			continue // late: a running job overran its estimate, or memory is short
		}
		s.start(j, j.resvRow, Explanation{Rule: RuleReservationDue, Procs: j.Processors, Free: s.rows[j.resvRow].cols.free, At: j.resv})
		started = true
	}
	if started {
		s.compactQueue()
	}
}

func (p *conservative) wakeup(s *Scheduler) (t time.Duration, ok bool) {
	for _, j := range s.queue {
		if j.resv > s.now && j.resv != never && (!ok || j.resv < t) {
			t, ok = j.resv, true
		}
	}
	return t, ok
}

func (p *conservative) explain(s *Scheduler, j *jobState) Explanation {
	return reservedExplanation(s, j)
}

// reservedExplanation says why a job holding a reservation has not
// started (conservative, and the priority-backfill policies).
func reservedExplanation(s *Scheduler, j *jobState) Explanation {
	why := Explanation{Procs: j.Processors, Free: s.rows[j.resvRow].cols.free, At: j.resv}
	switch {
	case j.resv > s.now:
		why.Rule = RuleReservedLater
	case s.fits(j, j.resvRow):
		why.Rule = RuleReservationDue // the next pass starts it
	case s.memoryBlocked(j):
		why.Rule = RuleNoMemory
	default:
		why.Rule = RuleReservationLate
	}
	return why
}
