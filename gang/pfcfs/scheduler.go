package pfcfs

import (
	"fmt"
	"slices"
	"time"

	"github.com/cosched/cosched/gang"
)

// Scheduler is a gang.Core: the simulator drives it with the same event
// loop as the matrix.
var _ gang.Core = (*Scheduler)(nil)

// State is where a known job is.
type State uint8

// Job states.
const (
	Queued State = iota + 1
	Running
	Suspended // preempted: holds its columns, does not run
)

func (s State) String() string {
	switch s {
	case Queued:
		return "queued"
	case Running:
		return "running"
	case Suspended:
		return "suspended"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

type job struct {
	gang.Job
	seq   uint64 // arrival order; breaks ties
	wide  bool
	state State
	cols  []int
}

// episode is one wide job's preemption: the wide job and the jobs it
// preempted alternate until one side completes.
type episode struct {
	wide     *job
	wideDone bool   // the wide job ended
	small    []*job // preempted jobs not yet ended, in the order picked
	wideRuns bool   // which side holds the machine
	switches int    // context switches so far, the preemption included
	next     time.Duration
}

// Scheduler is the PFCFS state machine. It is not safe for concurrent use.
type Scheduler struct {
	cfg  Config
	now  time.Duration
	seq  uint64
	jobs map[gang.JobID]*job

	queue   []*job // waiting, arrival order
	holding []*job // running or suspended, in start order
	held    []uint8
	free    int

	activeWide int           // wide jobs started and not ended
	wideEnded  time.Duration // when activeWide last dropped to 0
	headSince  time.Duration // when the current queue head became first
	ep         *episode

	out []gang.Decision
}

// New returns a Scheduler for cfg, or every problem with cfg.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Scheduler{
		cfg:  cfg,
		jobs: make(map[gang.JobID]*job),
		held: make([]uint8, cfg.Processors),
		free: cfg.Processors,
	}, nil
}

// Config returns the configuration the scheduler was built with.
func (s *Scheduler) Config() Config { return s.cfg }

func (s *Scheduler) advance(now time.Duration) error {
	if now < s.now {
		return fmt.Errorf("pfcfs: %w: %v after %v", gang.ErrTimeBackwards, now, s.now)
	}
	s.now = now
	return nil
}

// Submit queues a job arriving at now.
func (s *Scheduler) Submit(j gang.Job, now time.Duration) error {
	var problem error
	switch {
	case j.Processors < 1:
		problem = fmt.Errorf("%w: needs %d processors", gang.ErrInvalidJob, j.Processors)
	case j.Processors > s.cfg.Processors:
		problem = fmt.Errorf("%w: needs %d, machine has %d", gang.ErrJobTooWide, j.Processors, s.cfg.Processors)
	case j.Submit > now:
		problem = fmt.Errorf("%w: submit time %v is after now (%v)", gang.ErrInvalidJob, j.Submit, now)
	case s.jobs[j.ID] != nil:
		problem = gang.ErrDuplicateJob
	}
	if problem != nil {
		return fmt.Errorf("pfcfs: job %d: %w", j.ID, problem)
	}
	if err := s.advance(now); err != nil {
		return err
	}
	s.seq++
	js := &job{Job: j, seq: s.seq, wide: s.cfg.Wide(j.Processors), state: Queued}
	s.jobs[j.ID] = js
	if len(s.queue) == 0 {
		s.headSince = now
	}
	s.queue = append(s.queue, js)
	return nil
}

// Finished reports that a job ended at now: it completed, failed or was
// cancelled, queued, running or suspended.
func (s *Scheduler) Finished(id gang.JobID, now time.Duration) error {
	js := s.jobs[id]
	if js == nil {
		return fmt.Errorf("pfcfs: job %d: %w", id, gang.ErrUnknownJob)
	}
	if err := s.advance(now); err != nil {
		return err
	}
	delete(s.jobs, id)
	if js.state == Queued {
		i := slices.Index(s.queue, js)
		s.queue = slices.Delete(s.queue, i, i+1)
		if i == 0 {
			s.headSince = now
		}
		return nil
	}
	s.holding = slices.DeleteFunc(s.holding, func(h *job) bool { return h == js })
	for _, c := range js.cols {
		s.held[c]--
		if s.held[c] == 0 {
			s.free++
		}
	}
	if js.wide {
		s.activeWide--
		if s.activeWide == 0 {
			s.wideEnded = now
		}
	}
	if ep := s.ep; ep != nil {
		if ep.wide == js {
			ep.wideDone = true
		} else {
			ep.small = slices.DeleteFunc(ep.small, func(h *job) bool { return h == js })
		}
	}
	return nil
}

// Schedule runs a pass at now and returns the decisions to carry out, in an
// order safe to execute one by one: within a batch a job is preempted
// before another resumes or starts on its columns. The returned slice is
// reused by the next call.
func (s *Scheduler) Schedule(now time.Duration) ([]gang.Decision, error) {
	if err := s.advance(now); err != nil {
		return nil, err
	}
	s.out = s.out[:0]
	if s.ep != nil {
		s.stepEpisode()
	}
	for len(s.queue) > 0 {
		h := s.queue[0]
		switch {
		case h.Processors <= s.free:
			free := s.free
			s.place(h, s.lowestFree(h.Processors, nil))
			s.emit(gang.Start, h, gang.Explanation{Rule: gang.RuleFits, Procs: h.Processors, Free: free})
		case h.wide && s.activeWide == 0 && now >= s.preemptAt():
			s.preemptFor(h)
		default:
			return s.out, nil
		}
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.headSince = now
	}
	return s.out, nil
}

// stepEpisode ends the episode when a side has completed (resuming the
// other), or makes the context switch that is due.
func (s *Scheduler) stepEpisode() {
	ep := s.ep
	done := gang.Explanation{Rule: gang.RuleOtherSideDone, At: s.now}
	switch {
	case ep.wideDone:
		if !ep.wideRuns {
			s.ep = nil // the preempted side already runs
			return
		}
		for _, j := range ep.small {
			s.setState(j, Running, gang.Resume, done)
		}
		s.ep = nil
	case len(ep.small) == 0:
		if !ep.wideRuns {
			s.setState(ep.wide, Running, gang.Resume, done)
		}
		s.ep = nil
	case ep.switches < s.cfg.Switches && s.now >= ep.next:
		why := gang.Explanation{Rule: gang.RuleSwitch, At: s.now}
		if ep.wideRuns {
			s.setState(ep.wide, Suspended, gang.Preempt, why)
			for _, j := range ep.small {
				s.setState(j, Running, gang.Resume, why)
			}
		} else {
			for _, j := range ep.small {
				s.setState(j, Suspended, gang.Preempt, why)
			}
			s.setState(ep.wide, Running, gang.Resume, why)
		}
		ep.wideRuns = !ep.wideRuns
		ep.switches++
		ep.next = s.now + s.cfg.Switch
	}
}

// preemptAt is when the queue head, if wide and no earlier wide job is
// active, may preempt: Delay after both became true.
func (s *Scheduler) preemptAt() time.Duration {
	return max(s.headSince, s.wideEnded) + s.cfg.Delay
}

// preemptFor starts wide job w by preempting running jobs (see the package
// documentation for the greedy choice).
func (s *Scheduler) preemptFor(w *job) {
	free := s.free
	need := w.Processors - free
	var picks []*job
	for need > 0 {
		var best *job
		for _, c := range s.holding {
			if c.state != Running || slices.Contains(picks, c) || c.Processors < need {
				continue
			}
			if best == nil || c.Processors < best.Processors || (c.Processors == best.Processors && c.seq > best.seq) {
				best = c
			}
		}
		if best == nil {
			for _, c := range s.holding {
				if c.state != Running || slices.Contains(picks, c) {
					continue
				}
				if best == nil || c.Processors > best.Processors || (c.Processors == best.Processors && c.seq > best.seq) {
					best = c
				}
			}
		}
		if best == nil {
			// Unreachable: with no wide job active, every holder is a
			// running narrow job, and their columns plus the free ones
			// are the machine.
			panic(fmt.Sprintf("pfcfs: job %d needs %d more processors and nothing is left to preempt", w.ID, need))
		}
		picks = append(picks, best)
		need -= best.Processors
	}
	var cols []int
	for _, p := range picks {
		s.setState(p, Suspended, gang.Preempt, gang.Explanation{Rule: gang.RulePreemptedBy, Head: w.ID, Procs: p.Processors})
		cols = append(cols, p.cols[:min(len(p.cols), w.Processors-len(cols))]...)
	}
	if len(cols) < w.Processors {
		cols = s.lowestFree(w.Processors-len(cols), cols)
	}
	slices.Sort(cols)
	s.place(w, cols)
	s.emit(gang.Start, w, gang.Explanation{Rule: gang.RuleWidePreempts, Procs: w.Processors, Free: free})
	s.ep = &episode{wide: w, small: picks, wideRuns: true, switches: 1, next: s.now + s.cfg.Switch}
}

// lowestFree appends the n lowest free columns to cols.
func (s *Scheduler) lowestFree(n int, cols []int) []int {
	for c := 0; n > 0; c++ {
		if s.held[c] == 0 {
			cols = append(cols, c)
			n--
		}
	}
	return cols
}

// place makes j hold cols and run.
func (s *Scheduler) place(j *job, cols []int) {
	for _, c := range cols {
		if s.held[c] == 0 {
			s.free--
		}
		s.held[c]++
	}
	j.cols = cols
	j.state = Running
	if j.wide {
		s.activeWide++
	}
	s.holding = append(s.holding, j)
}

func (s *Scheduler) setState(j *job, st State, k gang.Kind, why gang.Explanation) {
	j.state = st
	s.emit(k, j, why)
}

func (s *Scheduler) emit(k gang.Kind, j *job, why gang.Explanation) {
	d := gang.Decision{Kind: k, Job: j.ID, Why: why}
	if k == gang.Start {
		d.Columns = j.cols
	}
	s.out = append(s.out, d)
}

// NextWakeup returns the next instant after the last call's now at which
// the core wants Schedule called even if no job arrives or ends: a wide
// job's start delay running out, or a context switch. ok is false when
// there is none.
func (s *Scheduler) NextWakeup() (t time.Duration, ok bool) {
	consider := func(at time.Duration) {
		if at > s.now && (!ok || at < t) {
			t, ok = at, true
		}
	}
	if ep := s.ep; ep != nil && !ep.wideDone && len(ep.small) > 0 && ep.switches < s.cfg.Switches {
		consider(ep.next)
	}
	if len(s.queue) > 0 {
		if h := s.queue[0]; h.wide && h.Processors > s.free && s.activeWide == 0 {
			consider(s.preemptAt())
		}
	}
	return t, ok
}

// Explain tells why job id is waiting, as of the last call.
func (s *Scheduler) Explain(id gang.JobID) gang.Explanation {
	js := s.jobs[id]
	if js == nil || js.state != Queued {
		return gang.Explanation{Rule: gang.RuleNotQueued}
	}
	h := s.queue[0]
	if h != js {
		return gang.Explanation{Rule: gang.RuleBehindHead, Head: h.ID}
	}
	if !js.wide {
		return gang.Explanation{Rule: gang.RuleTooFewFree, Procs: js.Processors, Free: s.free}
	}
	if s.activeWide > 0 {
		var first *job
		for _, w := range s.holding {
			if w.wide && (first == nil || w.seq < first.seq) {
				first = w
			}
		}
		return gang.Explanation{Rule: gang.RuleEarlierWide, Procs: js.Processors, Free: s.free, Head: first.ID}
	}
	return gang.Explanation{Rule: gang.RuleWideDelay, Procs: js.Processors, Free: s.free, At: s.preemptAt()}
}

// JobState returns where job id is, or false if the core does not know it
// (never submitted, or ended).
func (s *Scheduler) JobState(id gang.JobID) (State, bool) {
	js := s.jobs[id]
	if js == nil {
		return 0, false
	}
	return js.state, true
}

// Columns returns the columns a running or suspended job holds.
func (s *Scheduler) Columns(id gang.JobID) []int {
	if js := s.jobs[id]; js != nil {
		return slices.Clone(js.cols)
	}
	return nil
}

// Queued returns the IDs of waiting jobs in queue order.
func (s *Scheduler) Queued() []gang.JobID {
	ids := make([]gang.JobID, len(s.queue))
	for i, j := range s.queue {
		ids[i] = j.ID
	}
	return ids
}

// Free returns the number of columns no job holds.
func (s *Scheduler) Free() int { return s.free }
