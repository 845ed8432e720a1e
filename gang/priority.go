package gang

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds the priority-backfill policies of the NCSA Origin 2000
// study (Chiang): the queue is ordered by a priority computed at every pass,
// the first N jobs in that order that cannot start hold reservations, and a
// job starts now only if it delays none of them.

// Weights weigh the terms of the priority of a queued job at time now:
//
//	priority = Wait·wait_hours + Expansion·expansion + Processors·processors + Memory·memory_share
//
// with wait = now − Submit, expansion = (wait + estimate) / estimate (the
// estimate floored at one second), processors the job's size and
// memory_share the job's memory (Memory × Processors) as a fraction of the
// machine's (MemoryPerProcessor × Processors; 0 without a memory limit).
// Higher priority goes first; ties go to the earlier arrival.
type Weights struct {
	Wait       float64 `json:"ww"`
	Expansion  float64 `json:"wx"`
	Processors float64 `json:"wp"`
	Memory     float64 `json:"wm"`
}

func (w Weights) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return "ww=" + f(w.Wait) + ",wx=" + f(w.Expansion) + ",wp=" + f(w.Processors) + ",wm=" + f(w.Memory)
}

// ParseWeights reads "ww=1,wx=5,wp=0.2,wm=0": any subset of the four keys
// (omitted ones are 0), each a finite number.
func ParseWeights(text string) (Weights, error) {
	var w Weights
	seen := map[string]bool{}
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok {
			return Weights{}, fmt.Errorf("gang: weight %q: want key=value (keys ww, wx, wp, wm)", part)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return Weights{}, fmt.Errorf("gang: weight %s: %q is not a finite number", key, val)
		}
		if seen[key] {
			return Weights{}, fmt.Errorf("gang: weight %s given twice", key)
		}
		seen[key] = true
		switch key {
		case "ww":
			w.Wait = v
		case "wx":
			w.Expansion = v
		case "wp":
			w.Processors = v
		case "wm":
			w.Memory = v
		default:
			return Weights{}, fmt.Errorf("gang: unknown weight %q (keys: ww wait hours, wx expansion, wp processors, wm memory share)", key)
		}
	}
	if len(seen) == 0 {
		return Weights{}, errors.New("gang: no weights given (keys: ww, wx, wp, wm)")
	}
	return w, nil
}

// PresetWeights returns the weights of a weighted priority-backfill
// policy, and false for any other policy (sjf-bf orders by estimate).
func PresetWeights(p Policy) (Weights, bool) {
	switch p {
	case FCFSBF:
		return Weights{Wait: 1}, true
	case PriorityBF:
		return Weights{Wait: 1, Expansion: 5, Processors: 0.2}, true
	case LXFWBF:
		return Weights{Wait: 0.02, Expansion: 1}, true
	}
	return Weights{}, false
}

// ReservationMode says how reservations of the priority-backfill policies
// persist.
type ReservationMode string

// Reservation modes.
const (
	// Dynamic: every pass gives reservations afresh to the first N jobs, in
	// the current priority order, that cannot start now.
	Dynamic ReservationMode = "dynamic"
	// Fixed: a job keeps its reservation (the start time and row it was
	// given) once given, whatever its priority later; new reservations go
	// out, in priority order, while fewer than N jobs hold one.
	Fixed ReservationMode = "fixed"
)

// UnlimitedReservations as Backfill.Reservations gives every queued job a
// reservation (conservative-like).
const UnlimitedReservations = -1

// Backfill configures the priority-backfill policies (fcfs-bf, sjf-bf,
// priority-bf, lxfw-bf). The zero value is one dynamic reservation and the
// policy's own weights.
type Backfill struct {
	// Reservations is N, the number of jobs holding a reservation: 0 means
	// 1 (EASY-like); UnlimitedReservations means every queued job
	// (conservative-like).
	Reservations int
	// Mode is Dynamic (the default, also for "") or Fixed.
	Mode ReservationMode
	// Weights, when set, replace the preset's (not with sjf-bf).
	Weights *Weights
}

// ParseReservations reads a reservation depth: a positive count, or "inf"
// / "all" / "unlimited" for UnlimitedReservations.
func ParseReservations(text string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "inf", "all", "unlimited", "∞":
		return UnlimitedReservations, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("gang: reservations %q: want a count of at least 1, or inf", text)
	}
	return n, nil
}

// ParseReservationMode reads "dynamic" or "fixed".
func ParseReservationMode(text string) (ReservationMode, error) {
	m := ReservationMode(strings.ToLower(strings.TrimSpace(text)))
	if m == Dynamic || m == Fixed {
		return m, nil
	}
	return "", fmt.Errorf("gang: reservation mode %q: want dynamic or fixed", text)
}

// IsPriorityBackfill reports whether p is one of the priority-backfill
// policies that Config.Backfill configures.
func IsPriorityBackfill(p Policy) bool {
	switch p {
	case FCFSBF, SJFBF, PriorityBF, LXFWBF:
		return true
	}
	return false
}

// validate reports the problems of b for policy p.
func (b Backfill) validate(p Policy) []error {
	var errs []error
	if b.Reservations < UnlimitedReservations {
		errs = append(errs, fmt.Errorf("reservations must be at least 1 (or unlimited), got %d", b.Reservations))
	}
	if b.Mode != "" && b.Mode != Dynamic && b.Mode != Fixed {
		errs = append(errs, fmt.Errorf("reservation mode %q: want dynamic or fixed", b.Mode))
	}
	if b.Weights != nil {
		w := *b.Weights
		for _, v := range []float64{w.Wait, w.Expansion, w.Processors, w.Memory} {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				errs = append(errs, fmt.Errorf("weights %v: every weight must be finite", w))
				break
			}
		}
		if p == SJFBF {
			errs = append(errs, errors.New("sjf-bf orders by requested runtime: weights do not apply"))
		}
	}
	if (b != Backfill{}) && !IsPriorityBackfill(p) {
		errs = append(errs, fmt.Errorf("reservations and weights apply only to %s, %s, %s and %s, not %s", FCFSBF, SJFBF, PriorityBF, LXFWBF, p))
	}
	return errs
}

// priorityBF implements the priority-backfill policies. Every pass:
//
//  1. builds one availability profile per row from the running jobs (each
//     until its estimated end, a job past its estimate until now) and, in
//     fixed mode, the reservations jobs hold;
//  2. walks the runnable queue in priority order; a job starts now in the
//     first row where it fits (processors and memory) and where the profile
//     keeps its processors free for its whole estimate, i.e. it delays no
//     reservation; a fixed holder first gives its own slot back, and takes
//     it again if it cannot start;
//  3. a job that cannot start gets a reservation while fewer than N jobs
//     hold one: the earliest time its processors stay free for its estimate
//     in some row's profile (then the lowest row), entered in the profile.
//
// With N = 1, dynamic mode and arrival order (fcfs-bf) this is EASY; with N
// unlimited it is conservative backfilling except for compression (see
// docs/POLICIES.md for where they differ).
type priorityBF struct {
	weights Weights
	sjf     bool
	n       int // reservations; UnlimitedReservations for all
	fixed   bool

	// dirty is set by every arrival, end and capacity change; lastPass is
	// the instant of the last pass that decided anything. A pass with no
	// news and no reservation newly due decides nothing, so the outcome
	// does not depend on how often the caller asks (priorities change with
	// time alone).
	dirty    bool
	lastPass time.Duration

	profs []Profile
	order []ranked // scratch: the runnable queue in priority order
	first []resvAt // per row: the earliest reservation in this pass
}

type ranked struct {
	j    *jobState
	prio float64
}

type resvAt struct {
	at  time.Duration
	job JobID
	ok  bool
}

func newPriorityBF(cfg Config) *priorityBF {
	p := &priorityBF{lastPass: -1, n: 1, sjf: cfg.Policy == SJFBF, fixed: cfg.Backfill.Mode == Fixed,
		profs: make([]Profile, cfg.MPL), first: make([]resvAt, cfg.MPL)}
	p.weights, _ = PresetWeights(cfg.Policy)
	if cfg.Backfill.Weights != nil {
		p.weights = *cfg.Backfill.Weights
	}
	if cfg.Backfill.Reservations != 0 {
		p.n = cfg.Backfill.Reservations
	}
	return p
}

// Priority returns a job's priority at now under w (see Weights).
func Priority(w Weights, j Job, now time.Duration, m Machine) float64 {
	wait := max(now-j.Submit, 0)
	est := max(j.Estimate, time.Second)
	prio := w.Wait*wait.Hours() + w.Expansion*(wait+est).Seconds()/est.Seconds() + w.Processors*float64(j.Processors)
	if w.Memory != 0 && m.MemoryPerProcessor > 0 {
		prio += w.Memory * float64(j.Memory) * float64(j.Processors) / (float64(m.MemoryPerProcessor) * float64(m.Processors))
	}
	return prio
}

// rank orders the runnable queue by priority at now (highest first; SJF:
// shortest estimate first), ties by arrival.
func (p *priorityBF) rank(s *Scheduler) []ranked {
	p.order = p.order[:0]
	for _, j := range s.runnable() {
		r := ranked{j: j}
		if !p.sjf {
			r.prio = Priority(p.weights, j.Job, s.now, s.cfg.Machine)
		}
		p.order = append(p.order, r)
	}
	slices.SortFunc(p.order, func(a, b ranked) int {
		if p.sjf {
			if c := cmp.Compare(a.j.Estimate, b.j.Estimate); c != 0 {
				return c
			}
		} else if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.j.seq, b.j.seq)
	})
	return p.order
}

// slot is the interval a reservation holds in the profile. A reservation
// whose start has passed (its job is due but blocked by an overrun or by
// memory) holds only what is left of it, as in conservative backfilling.
func (p *priorityBF) slot(s *Scheduler, j *jobState) (from, to time.Duration) {
	return j.resv, j.resv + s.span(j)
}

func (p *priorityBF) buildProfiles(s *Scheduler) {
	for r := range p.profs {
		p.profs[r] = NewProfile(0, s.online, 0)
		p.profs[r].Advance(s.now)
		for _, j := range s.rows[r].running {
			p.profs[r].Add(s.now, max(j.estEnd, s.now), -len(s.onlineOnly(j.cols)), 0)
		}
		p.first[r] = resvAt{}
	}
}

func (p *priorityBF) noteReservation(j *jobState) {
	f := &p.first[j.resvRow]
	if !f.ok || j.resv < f.at {
		*f = resvAt{at: j.resv, job: j.ID, ok: true}
	}
}

// news reports whether a pass at now may decide anything: something
// arrived, ended or changed capacity, or a reservation has come due since
// the last pass (the instants NextWakeup reports).
func (p *priorityBF) news(s *Scheduler) bool {
	if p.dirty {
		return true
	}
	for _, j := range s.queue {
		if j.resv > p.lastPass && j.resv <= s.now {
			return true
		}
	}
	return false
}

func (p *priorityBF) schedule(s *Scheduler) {
	if !p.news(s) {
		return
	}
	p.dirty, p.lastPass = false, s.now
	p.buildProfiles(s)
	held := 0
	for _, j := range s.queue {
		switch {
		case !p.fixed:
			j.resv = -1
		case j.resv >= 0:
			from, to := p.slot(s, j)
			p.profs[j.resvRow].Add(from, to, -j.Processors, 0)
			p.noteReservation(j)
			held++
		}
	}
	started := false
	for _, rk := range p.rank(s) {
		j := rk.j
		own := j.resv >= 0 // fixed mode: a reservation held from an earlier pass
		if !s.anyFree() && (p.n != UnlimitedReservations && held >= p.n) {
			break // nothing can start, and no reservation is left to give
		}
		if own {
			from, to := p.slot(s, j)
			p.profs[j.resvRow].Add(from, to, j.Processors, 0)
		}
		r, ok := p.startable(s, j)
		if own && j.resv <= s.now && s.fits(j, j.resvRow) {
			// Its reservation is due: it starts where it was reserved, even
			// if a job before it is late and overlaps (conservative's rule).
			r, ok = j.resvRow, true
		}
		if ok {
			why := p.why(s, j, r, own)
			p.profs[r].Add(s.now, s.now+s.span(j), -j.Processors, 0)
			s.start(j, r, why)
			started = true
			if own {
				held-- // its reservation is free for the next job
			}
			continue
		}
		if own {
			from, to := p.slot(s, j)
			p.profs[j.resvRow].Add(from, to, -j.Processors, 0)
			continue
		}
		if p.n != UnlimitedReservations && held >= p.n {
			continue
		}
		p.reserve(s, j)
		held++
	}
	if started {
		s.compactQueue()
	}
}

// startable returns the first row where j fits now and its processors stay
// free, by the profile, for its whole estimate.
func (p *priorityBF) startable(s *Scheduler, j *jobState) (int, bool) {
	span := s.span(j)
	for r := range s.rows {
		if s.fits(j, r) && p.profs[r].Earliest(s.now, span, j.Processors, 0) == s.now {
			return r, true
		}
	}
	return 0, false
}

func (p *priorityBF) reserve(s *Scheduler, j *jobState) {
	span := s.span(j)
	for r := range p.profs {
		at := p.profs[r].Earliest(s.now, span, j.Processors, 0)
		if r == 0 || at < j.resv {
			j.resv, j.resvRow = at, r
		}
	}
	p.profs[j.resvRow].Add(j.resv, j.resv+span, -j.Processors, 0)
	p.noteReservation(j)
}

// why explains a start in row r: its own reservation reached, a plain fit
// (no reservation in that row), or a backfill around the earliest
// reservation there.
func (p *priorityBF) why(s *Scheduler, j *jobState, r int, own bool) Explanation {
	free := s.rows[r].cols.free
	if own && j.resv <= s.now {
		return Explanation{Rule: RuleReservationDue, Procs: j.Processors, Free: free, At: j.resv}
	}
	f := p.first[r]
	if !f.ok || (own && f.job == j.ID) {
		return Explanation{Rule: RuleFits, Procs: j.Processors, Free: free}
	}
	why := Explanation{Procs: j.Processors, Free: free, At: f.at, Head: f.job}
	if s.now+s.span(j) <= f.at {
		why.Rule = RuleBackfillShadow
		return why
	}
	why.Rule = RuleBackfillExtra
	why.Extra, _ = p.profs[r].Free(f.at)
	return why
}

func (p *priorityBF) submitted(*Scheduler, *jobState)           { p.dirty = true }
func (p *priorityBF) removed(*Scheduler, *jobState, bool, bool) { p.dirty = true }
func (p *priorityBF) settle(*Scheduler)                         {}

func (p *priorityBF) started(_ *Scheduler, j *jobState) { j.resv = -1 }

// capacityChanged drops every reservation: they were placed for another
// machine. The next pass gives them out again in priority order.
func (p *priorityBF) capacityChanged(s *Scheduler) {
	p.dirty = true
	for _, j := range s.queue {
		j.resv = -1
	}
}

// wakeup is the earliest reservation still ahead: its job may start then
// without any job arriving or ending (a reservation chained after another
// one that has since moved, or a fixed one left behind by an early end).
func (p *priorityBF) wakeup(s *Scheduler) (t time.Duration, ok bool) {
	for _, j := range s.queue {
		if j.resv > s.now && (!ok || j.resv < t) {
			t, ok = j.resv, true
		}
	}
	return t, ok
}

func (p *priorityBF) explain(s *Scheduler, j *jobState) Explanation {
	if j.resv >= 0 {
		return reservedExplanation(s, j)
	}
	if r, ok := s.firstFit(j); ok {
		if why, ok := p.delayed(s, j, r); ok {
			return why
		}
		return Explanation{Rule: RuleFits, Procs: j.Processors, Free: s.rows[r].cols.free} // the next pass starts it
	}
	if s.memoryBlocked(j) {
		return Explanation{Rule: RuleNoMemory, Procs: j.Processors}
	}
	most := 0
	for r := range s.rows {
		most = max(most, s.rows[r].cols.free)
	}
	return Explanation{Rule: RuleTooFewFree, Procs: j.Processors, Free: most}
}

// delayed finds, in the last pass's profile of row r, the first instant of
// j's estimate at which too few processors stay free, and the reservation
// that holds them then: the latest-starting one whose slot covers it.
func (p *priorityBF) delayed(s *Scheduler, j *jobState, r int) (Explanation, bool) {
	prof := &p.profs[r]
	if len(prof.steps) == 0 {
		return Explanation{}, false
	}
	end := s.now + s.span(j)
	first := prof.index(s.now)
	for i := first; i < len(prof.steps); i++ {
		st := prof.steps[i]
		if i > first && st.at >= end {
			break
		}
		if st.procs >= j.Processors {
			continue
		}
		at := max(st.at, s.now)
		var head *jobState
		for _, q := range s.queue {
			if q.resv < 0 || q.resvRow != r {
				continue
			}
			from, to := p.slot(s, q)
			if from <= at && at < to && (head == nil || q.resv > head.resv) {
				head = q
			}
		}
		if head == nil {
			return Explanation{}, false
		}
		return Explanation{Rule: RuleWouldDelayHead, Procs: j.Processors, Free: s.rows[r].cols.free, At: head.resv, Extra: st.procs, Head: head.ID}, true
	}
	return Explanation{}, false
}
