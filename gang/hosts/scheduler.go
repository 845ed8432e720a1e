package hosts

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cosched/cosched/gang"
)

// unlimited stands for the memory of a host without a limit.
const unlimited = int64(1) << 62

// Config configures a Scheduler.
type Config struct {
	// Hosts are the machine's hosts, in the order that breaks ties.
	Hosts []Host
	// Policy orders the queue: one of gang's priority-backfill policies
	// (fcfs-bf, sjf-bf, priority-bf, lxfw-bf).
	Policy gang.Policy
	// Backfill holds the reservations (N, dynamic or fixed) and weights, as
	// for gang's priority-backfill policies.
	Backfill gang.Backfill
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Hosts) == 0 {
		errs = append(errs, errors.New("no hosts"))
	}
	for i, h := range c.Hosts {
		if h.Processors < 1 {
			errs = append(errs, fmt.Errorf("host %d (%s): processors must be at least 1, got %d", i, h.Name, h.Processors))
		}
		if h.Memory < 0 {
			errs = append(errs, fmt.Errorf("host %d (%s): memory must not be negative, got %d", i, h.Name, h.Memory))
		}
	}
	if !gang.IsPriorityBackfill(c.Policy) {
		errs = append(errs, fmt.Errorf("policy %q is not a priority-backfill policy (fcfs-bf, sjf-bf, priority-bf, lxfw-bf)", c.Policy))
	}
	if c.Backfill.Reservations < gang.UnlimitedReservations {
		errs = append(errs, fmt.Errorf("reservations must be at least 1 or unlimited, got %d", c.Backfill.Reservations))
	}
	if m := c.Backfill.Mode; m != "" && m != gang.Dynamic && m != gang.Fixed {
		errs = append(errs, fmt.Errorf("reservation mode %q: want dynamic or fixed", m))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("hosts: invalid config: %w", errors.Join(errs...))
}

// Fits reports whether a job of procs processors and mem bytes (in all)
// fits host h when it is empty.
func (h Host) Fits(procs int, mem int64) bool {
	return procs <= h.Processors && (h.Memory == 0 || mem <= h.Memory)
}

// JobMemory is the memory a job needs on its host: Memory (per process)
// × Processors.
func JobMemory(j gang.Job) int64 { return j.Memory * int64(j.Processors) }

// Start is a decision: run Job on host Host from now.
type Start struct {
	Job  gang.JobID
	Host int
	// Why is the rule: "fits" (no reservation on the host), "backfill"
	// (around a reservation) or "reservation" (its own, come due).
	Why string
}

type job struct {
	gang.Job
	mem      int64 // in all
	seq      uint64
	running  bool
	host     int
	estEnd   time.Duration // running: when it ends by its estimate
	resv     time.Duration // queued: reservation start, -1 for none
	resvHost int
	prio     float64
}

type host struct {
	Host
	free    int
	freeMem int64
	running []*job // start order
}

// Scheduler is the multi-host priority-backfill state machine. It is not
// safe for concurrent use.
type Scheduler struct {
	cfg     Config
	weights gang.Weights
	sjf     bool
	n       int
	fixed   bool

	now   time.Duration
	seq   uint64
	jobs  map[gang.JobID]*job
	queue []*job // arrival order
	hosts []host

	dirty    bool
	lastPass time.Duration
	profs    []gang.Profile
	resvOn   []bool // in a pass: the host holds a reservation
	wide     int    // the most processors of any host
	bigMem   int64  // the most memory of any host (unlimited if any is)
}

// New returns a Scheduler for cfg, or every problem with cfg.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, jobs: map[gang.JobID]*job{}, n: 1, lastPass: -1,
		sjf: cfg.Policy == gang.SJFBF, fixed: cfg.Backfill.Mode == gang.Fixed}
	s.weights, _ = gang.PresetWeights(cfg.Policy)
	if cfg.Backfill.Weights != nil {
		s.weights = *cfg.Backfill.Weights
	}
	if cfg.Backfill.Reservations != 0 {
		s.n = cfg.Backfill.Reservations
	}
	for _, h := range cfg.Hosts {
		hs := host{Host: h, free: h.Processors, freeMem: h.Memory}
		if h.Memory == 0 {
			hs.freeMem = unlimited
		}
		s.hosts = append(s.hosts, hs)
		s.wide = max(s.wide, h.Processors)
		s.bigMem = max(s.bigMem, hs.freeMem)
	}
	s.profs = make([]gang.Profile, len(s.hosts))
	s.resvOn = make([]bool, len(s.hosts))
	return s, nil
}

// Hosts returns the machine's hosts.
func (s *Scheduler) Hosts() []Host { return slices.Clone(s.cfg.Hosts) }

// FitsSomeHost reports whether a job could ever run: some host has its
// processors and its memory (JobMemory).
func (s *Scheduler) FitsSomeHost(j gang.Job) bool {
	for _, h := range s.cfg.Hosts {
		if h.Fits(j.Processors, JobMemory(j)) {
			return true
		}
	}
	return false
}

// Free returns what is free on host h now: processors and memory
// (unlimited memory is reported as a very large number).
func (s *Scheduler) Free(h int) (procs int, mem int64) { return s.hosts[h].free, s.hosts[h].freeMem }

func (s *Scheduler) advance(now time.Duration) error {
	if now < s.now {
		return fmt.Errorf("hosts: %w: %v after %v", gang.ErrTimeBackwards, now, s.now)
	}
	s.now = now
	return nil
}

func (s *Scheduler) check(j gang.Job, now time.Duration, minProcs int) error {
	var problem error
	switch {
	case j.Processors < minProcs:
		problem = fmt.Errorf("%w: needs %d processors", gang.ErrInvalidJob, j.Processors)
	case j.Estimate < 0 || j.Memory < 0:
		problem = fmt.Errorf("%w: negative estimate or memory", gang.ErrInvalidJob)
	case j.Submit > now:
		problem = fmt.Errorf("%w: submit time %v is after now (%v)", gang.ErrInvalidJob, j.Submit, now)
	case s.jobs[j.ID] != nil:
		problem = gang.ErrDuplicateJob
	}
	if problem != nil {
		return fmt.Errorf("hosts: job %d: %w", j.ID, problem)
	}
	return s.advance(now)
}

// Submit queues a job arriving at now. A job that fits no host is refused
// with gang.ErrJobTooWide.
func (s *Scheduler) Submit(j gang.Job, now time.Duration) error {
	if err := s.check(j, now, 1); err != nil {
		return err
	}
	if !s.FitsSomeHost(j) {
		return fmt.Errorf("hosts: job %d: %w: needs %d processors and %d bytes, no host has both", j.ID, gang.ErrJobTooWide, j.Processors, JobMemory(j))
	}
	s.seq++
	js := &job{Job: j, mem: JobMemory(j), seq: s.seq, resv: -1}
	s.jobs[j.ID] = js
	s.queue = append(s.queue, js)
	s.dirty = true
	return nil
}

// Place starts a job on host h at once, outside the queue (the
// simulator's immediate service): it takes procs of the host's free
// processors (0 allowed; the job may run on processors it took from
// preempted jobs, which the core still counts as theirs) and JobMemory(j)
// of its free memory until it is Finished, and is counted as ending by its
// estimate. It fails if they are not free.
func (s *Scheduler) Place(j gang.Job, procs, h int, now time.Duration) error {
	if err := s.check(j, now, 0); err != nil {
		return err
	}
	if h < 0 || h >= len(s.hosts) || procs < 0 {
		return fmt.Errorf("hosts: job %d: no host %d or negative processors %d", j.ID, h, procs)
	}
	js := &job{Job: j, mem: JobMemory(j), resv: -1}
	js.Processors = procs
	if hs := &s.hosts[h]; procs > hs.free || js.mem > hs.freeMem {
		return fmt.Errorf("hosts: job %d: needs %d processors and %d bytes on host %s, %d and %d free", j.ID, procs, js.mem, hs.Name, hs.free, hs.freeMem)
	}
	s.seq++
	js.seq = s.seq
	s.jobs[j.ID] = js
	s.run(js, h)
	s.dirty = true
	return nil
}

// SetEstimatedEnd moves a running job's estimated end (the simulator
// stretches it by the time a job spends preempted).
func (s *Scheduler) SetEstimatedEnd(id gang.JobID, end time.Duration) error {
	js := s.jobs[id]
	if js == nil || !js.running {
		return fmt.Errorf("hosts: job %d: %w (or not running)", id, gang.ErrUnknownJob)
	}
	js.estEnd = end
	s.dirty = true
	return nil
}

// Finished reports that a job ended at now, queued or running; its
// processors and memory are free again.
func (s *Scheduler) Finished(id gang.JobID, now time.Duration) error {
	js := s.jobs[id]
	if js == nil {
		return fmt.Errorf("hosts: job %d: %w", id, gang.ErrUnknownJob)
	}
	if err := s.advance(now); err != nil {
		return err
	}
	delete(s.jobs, id)
	s.dirty = true
	if !js.running {
		s.queue = slices.DeleteFunc(s.queue, func(q *job) bool { return q == js })
		return nil
	}
	h := &s.hosts[js.host]
	h.free += js.Processors
	h.freeMem += js.mem
	h.running = slices.DeleteFunc(h.running, func(q *job) bool { return q == js })
	return nil
}

func (s *Scheduler) run(js *job, h int) {
	js.running, js.host, js.estEnd, js.resv = true, h, s.now+js.Estimate, -1
	hs := &s.hosts[h]
	hs.free -= js.Processors
	hs.freeMem -= js.mem
	hs.running = append(hs.running, js)
}

// Queued returns the number of queued jobs.
func (s *Scheduler) Queued() int { return len(s.queue) }

// Reservation returns a queued job's reservation: its start and host.
func (s *Scheduler) Reservation(id gang.JobID) (at time.Duration, h int, ok bool) {
	js := s.jobs[id]
	if js == nil || js.running || js.resv < 0 {
		return 0, 0, false
	}
	return js.resv, js.resvHost, true
}

// news reports whether a pass may decide anything (see gang's
// priority-backfill: arrivals, ends and reservations come due).
func (s *Scheduler) news() bool {
	if s.dirty {
		return true
	}
	for _, j := range s.queue {
		if j.resv > s.lastPass && j.resv <= s.now {
			return true
		}
	}
	return false
}

// Schedule runs a pass at now and returns the jobs it starts, in order.
func (s *Scheduler) Schedule(now time.Duration) ([]Start, error) {
	if err := s.advance(now); err != nil {
		return nil, err
	}
	if !s.news() {
		return nil, nil
	}
	s.dirty, s.lastPass = false, now
	for i := range s.hosts {
		h := &s.hosts[i]
		memCap := h.Memory
		if memCap == 0 {
			memCap = unlimited
		}
		s.profs[i] = gang.NewProfile(now, h.Processors, memCap)
		s.resvOn[i] = false
		for _, j := range h.running {
			s.profs[i].Add(now, max(j.estEnd, now), -j.Processors, -j.mem)
		}
	}
	held := 0
	for _, j := range s.queue {
		if !s.fixed {
			j.resv = -1
		} else if j.resv >= 0 {
			s.profs[j.resvHost].Add(j.resv, j.resv+j.Estimate, -j.Processors, -j.mem)
			s.resvOn[j.resvHost] = true
			held++
		}
	}
	for _, j := range s.queue {
		if !s.sjf {
			j.prio = gang.Priority(s.weights, j.Job, now, gang.Machine{})
		}
	}
	order := slices.Clone(s.queue)
	slices.SortStableFunc(order, func(a, b *job) int {
		if s.sjf {
			if c := cmp.Compare(a.Estimate, b.Estimate); c != 0 {
				return c
			}
		} else if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	var out []Start
	for _, j := range order {
		own := j.resv >= 0
		if own {
			s.profs[j.resvHost].Add(j.resv, j.resv+j.Estimate, j.Processors, j.mem)
		}
		h, why := s.startable(j), "fits"
		if h >= 0 && s.resvOn[h] {
			why = "backfill"
		}
		if own && j.resv <= now && s.fitsNow(j, j.resvHost) {
			h, why = j.resvHost, "reservation"
		}
		if h >= 0 {
			s.profs[h].Add(now, now+j.Estimate, -j.Processors, -j.mem)
			s.run(j, h)
			out = append(out, Start{Job: j.ID, Host: h, Why: why})
			if own {
				held--
			}
			continue
		}
		if own {
			s.profs[j.resvHost].Add(j.resv, j.resv+j.Estimate, -j.Processors, -j.mem)
			continue
		}
		if s.n != gang.UnlimitedReservations && held >= s.n {
			continue
		}
		s.reserve(j)
		held++
	}
	if len(out) > 0 {
		s.queue = slices.DeleteFunc(s.queue, func(j *job) bool { return j.running })
	}
	return out, nil
}

func (s *Scheduler) fitsNow(j *job, h int) bool {
	return j.Processors <= s.hosts[h].free && j.mem <= s.hosts[h].freeMem
}

// startable returns the best-fit host where j fits now and stays within
// every reservation for its whole estimate: the fewest free processors,
// then the lowest index; -1 if none.
func (s *Scheduler) startable(j *job) int {
	best := -1
	for h := range s.hosts {
		if !s.fitsNow(j, h) || s.profs[h].Earliest(s.now, j.Estimate, j.Processors, j.mem) != s.now {
			continue
		}
		if best < 0 || s.hosts[h].free < s.hosts[best].free {
			best = h
		}
	}
	return best
}

// reserve gives j the earliest slot over the hosts' profiles (ties: the
// fewest free processors now, then the lowest index) and enters it.
func (s *Scheduler) reserve(j *job) {
	j.resv = -1
	for h := range s.hosts {
		if !s.hosts[h].Fits(j.Processors, j.mem) {
			continue
		}
		at := s.profs[h].Earliest(s.now, j.Estimate, j.Processors, j.mem)
		if at < 0 {
			continue
		}
		if j.resv < 0 || at < j.resv || (at == j.resv && s.hosts[h].free < s.hosts[j.resvHost].free) {
			j.resv, j.resvHost = at, h
		}
	}
	if j.resv >= 0 {
		s.profs[j.resvHost].Add(j.resv, j.resv+j.Estimate, -j.Processors, -j.mem)
		s.resvOn[j.resvHost] = true
	}
}

// NextWakeup returns the earliest reservation still ahead: its job may
// start then with nothing arriving or ending.
func (s *Scheduler) NextWakeup() (t time.Duration, ok bool) {
	for _, j := range s.queue {
		if j.resv > s.now && (!ok || j.resv < t) {
			t, ok = j.resv, true
		}
	}
	return t, ok
}
