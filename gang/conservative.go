package gang

import "time"

// conservative implements conservative backfilling: every queued job holds
// a reservation in the availability profile, placed in arrival order at the
// earliest time it fits; jobs start when their reservation is reached.
type conservative struct {
	prof profile
	// stale is set when processors were released (a job ended early, or a
	// queued job left) and reservations await compression. Compression runs
	// once, before the next placement or pass, so the outcome does not
	// depend on the order in which jobs ending at one instant are reported.
	stale bool
}

func newConservative(processors int) *conservative {
	return &conservative{prof: newProfile(processors)}
}

func (p *conservative) submitted(s *Scheduler, j *jobState) {
	p.prof.advance(s.now)
	// Jobs already queued are compressed before the newcomer is placed, so
	// it cannot take a slot an older job is entitled to.
	p.compress(s, j)
	p.reserve(s, j)
}

func (p *conservative) reserve(s *Scheduler, j *jobState) {
	j.resv = p.prof.earliest(s.now, j.Estimate, j.Processors)
	p.prof.add(j.resv, j.resv+j.Estimate, -j.Processors)
}

func (p *conservative) removed(s *Scheduler, j *jobState, wasRunning, early bool) {
	p.prof.advance(s.now)
	switch {
	case !wasRunning:
		p.prof.add(j.resv, j.resv+j.Estimate, j.Processors)
	case early:
		p.prof.add(s.now, j.estEnd, j.Processors)
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
		p.prof.add(j.resv, j.resv+j.Estimate, j.Processors)
		p.reserve(s, j)
	}
}

func (p *conservative) started(s *Scheduler, j *jobState) {
	if j.resv != s.now {
		// A late start (a running job overran its estimate): move the
		// occupation from the reserved slot to the real one.
		p.prof.add(j.resv, j.resv+j.Estimate, j.Processors)
		p.prof.add(s.now, s.now+j.Estimate, -j.Processors)
	}
	j.resv = -1
}

func (p *conservative) settle(s *Scheduler) {
	p.prof.advance(s.now)
	p.compress(s, nil)
}

func (p *conservative) schedule(s *Scheduler) {
	p.settle(s)
	started := false
	for _, j := range s.queue {
		if j.resv > s.now {
			continue
		}
		if j.Processors > s.free() {
			continue // late: a running job overran its estimate
		}
		s.start(j, Explanation{Rule: RuleReservationDue, Procs: j.Processors, Free: s.free(), At: j.resv})
		started = true
	}
	if started {
		s.compactQueue()
	}
}

func (p *conservative) wakeup(s *Scheduler) (t time.Duration, ok bool) {
	for _, j := range s.queue {
		if j.resv > s.now && (!ok || j.resv < t) {
			t, ok = j.resv, true
		}
	}
	return t, ok
}

func (p *conservative) explain(s *Scheduler, j *jobState) Explanation {
	why := Explanation{Procs: j.Processors, Free: s.free(), At: j.resv}
	switch {
	case j.resv > s.now:
		why.Rule = RuleReservedLater
	case j.Processors <= why.Free:
		why.Rule = RuleReservationDue // the next pass starts it
	default:
		why.Rule = RuleReservationLate
	}
	return why
}
