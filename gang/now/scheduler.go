package now

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// JobID identifies a job. IDs are unique among the jobs a Scheduler holds.
type JobID int64

// Job is what the core knows of a job.
type Job struct {
	ID JobID
	// Tasks is the number of nodes the job needs (1: sequential).
	Tasks int
	// Estimate is the estimated processing time: what one task takes on a
	// node of speed 1, as far as the scheduler knows.
	Estimate time.Duration
	// Balanced says the job spreads its work over its nodes in proportion
	// to their speeds (effective speed Σs/k instead of min s).
	Balanced bool
}

// Config configures a Scheduler.
type Config struct {
	// Speeds are the nodes' relative speeds, node i having Speeds[i] > 0.
	Speeds []float64
	// Policy orders the queue.
	Policy Policy
	// Rand is the random source of the random policy (required for it,
	// unused by the others). The caller seeds it; e.g.
	// rand.New(rand.NewPCG(seed, stream)).
	Rand *rand.Rand
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Speeds) == 0 {
		errs = append(errs, errors.New("no nodes"))
	}
	for i, s := range c.Speeds {
		if !(s > 0) || math.IsInf(s, 0) {
			errs = append(errs, fmt.Errorf("node %d: speed %v: must be positive and finite", i, s))
		}
	}
	if _, err := ParsePolicy(string(c.Policy)); err != nil {
		errs = append(errs, fmt.Errorf("unknown policy %q (valid: %s)", c.Policy, PolicyList()))
	}
	if c.Policy == Random && c.Rand == nil {
		errs = append(errs, errors.New("policy random needs a random source (Config.Rand)"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("now: invalid config: %w", errors.Join(errs...))
}

// Start is a decision: run Job on Nodes from At.
type Start struct {
	Job   Job
	At    time.Duration
	Nodes []int // the job's nodes, fastest first
	// Speed is the job's effective speed on Nodes: its real runtime is
	// processing time / Speed.
	Speed float64
	// EstimatedEnd is At + Job.Estimate / Speed.
	EstimatedEnd time.Duration
	// Why is the rule that started the job.
	Why string
}

// Done describes a job that the caller reported Finished.
type Done struct {
	Start
	End time.Duration
	// Normalized is the processing time the run represents:
	// (End − At) × Speed. Learned estimators observe it.
	Normalized time.Duration
}

type running struct {
	Start
}

// Scheduler is the core. It is not safe for concurrent use.
type Scheduler struct {
	cfg     Config
	order   []int // node indices, fastest first (ties: lower index)
	idle    []bool
	nIdle   int
	queue   []Job // arrival order
	known   map[JobID]bool
	running map[JobID]*running
	last    time.Duration
}

// New returns a Scheduler for a validated configuration. It keeps its own
// copy of the speeds.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Speeds = slices.Clone(cfg.Speeds)
	s := &Scheduler{
		cfg:     cfg,
		idle:    make([]bool, len(cfg.Speeds)),
		nIdle:   len(cfg.Speeds),
		known:   make(map[JobID]bool),
		running: make(map[JobID]*running),
	}
	for i := range s.idle {
		s.idle[i] = true
		s.order = append(s.order, i)
	}
	slices.SortStableFunc(s.order, func(a, b int) int { return cmp.Compare(cfg.Speeds[b], cfg.Speeds[a]) })
	return s, nil
}

// Nodes returns the number of nodes.
func (s *Scheduler) Nodes() int { return len(s.cfg.Speeds) }

// Queued returns the number of jobs waiting.
func (s *Scheduler) Queued() int { return len(s.queue) }

// Running returns the number of jobs running.
func (s *Scheduler) Running() int { return len(s.running) }

func (s *Scheduler) advance(at time.Duration) error {
	if at < s.last {
		return fmt.Errorf("now: time went backwards: %v after %v", at, s.last)
	}
	s.last = at
	return nil
}

// Submit queues a job that arrived at time at.
func (s *Scheduler) Submit(j Job, at time.Duration) error {
	if err := s.advance(at); err != nil {
		return err
	}
	switch {
	case s.known[j.ID]:
		return fmt.Errorf("now: job %d submitted twice", j.ID)
	case j.Tasks < 1 || j.Tasks > len(s.cfg.Speeds):
		return fmt.Errorf("now: job %d: %d tasks on %d nodes", j.ID, j.Tasks, len(s.cfg.Speeds))
	case j.Estimate < 0:
		return fmt.Errorf("now: job %d: negative estimate %v", j.ID, j.Estimate)
	}
	s.known[j.ID] = true
	s.queue = append(s.queue, j)
	return nil
}

// Finished releases a running job's nodes at time at.
func (s *Scheduler) Finished(id JobID, at time.Duration) (Done, error) {
	if err := s.advance(at); err != nil {
		return Done{}, err
	}
	r, ok := s.running[id]
	if !ok {
		return Done{}, fmt.Errorf("now: job %d finished but is not running", id)
	}
	delete(s.running, id)
	delete(s.known, id)
	for _, n := range r.Nodes {
		s.idle[n] = true
	}
	s.nIdle += len(r.Nodes)
	return Done{Start: r.Start, End: at, Normalized: Normalized(at-r.At, r.Speed)}, nil
}

// Schedule applies the policy at time at and returns the jobs to start, in
// the order they were chosen.
func (s *Scheduler) Schedule(at time.Duration) ([]Start, error) {
	if err := s.advance(at); err != nil {
		return nil, err
	}
	var out []Start
	start := func(i int, why string) {
		out = append(out, s.start(i, at, why))
	}
	switch s.cfg.Policy {
	case FIFO:
		for len(s.queue) > 0 && s.fits(s.queue[0]) {
			start(0, "fifo: queue head fits")
		}
	case FirstFit:
		for i := 0; i < len(s.queue); {
			if s.fits(s.queue[i]) {
				start(i, "firstfit: first queued job that fits")
			} else {
				i++
			}
		}
	case Random:
		var fit []int
		for {
			fit = fit[:0]
			for i, j := range s.queue {
				if s.fits(j) {
					fit = append(fit, i)
				}
			}
			if len(fit) == 0 {
				break
			}
			start(fit[s.cfg.Rand.IntN(len(fit))], fmt.Sprintf("random: drawn among %d jobs that fit", len(fit)))
		}
	case LPT, SPT:
		for len(s.queue) > 0 {
			i := s.extreme()
			if !s.fits(s.queue[i]) {
				break
			}
			start(i, string(s.cfg.Policy)+": chosen job fits")
		}
	case FIFOBackfill:
		for len(s.queue) > 0 && s.fits(s.queue[0]) {
			start(0, "fifo-bf: queue head fits")
		}
		if len(s.queue) > 1 {
			s.backfill(at, start)
		}
	}
	return out, nil
}

// extreme returns the queue index of the job lpt or spt chooses.
func (s *Scheduler) extreme() int {
	best := 0
	for i, j := range s.queue[1:] {
		e, b := j.Estimate, s.queue[best].Estimate
		if (s.cfg.Policy == LPT && e > b) || (s.cfg.Policy == SPT && e < b) {
			best = i + 1
		}
	}
	return best
}

// Reservation returns the queue head's shadow time and spare node count
// under fifo-bf at time at (see the package documentation). ok is false
// when the queue is empty.
func (s *Scheduler) Reservation(at time.Duration) (shadow time.Duration, spare int, ok bool) {
	if len(s.queue) == 0 {
		return 0, 0, false
	}
	need := s.queue[0].Tasks
	free := s.nIdle
	if free >= need {
		return at, free - need, true
	}
	runs := make([]*running, 0, len(s.running))
	for _, r := range s.running {
		runs = append(runs, r)
	}
	end := func(r *running) time.Duration { return max(r.EstimatedEnd, at) }
	slices.SortFunc(runs, func(a, b *running) int {
		return cmp.Or(cmp.Compare(end(a), end(b)), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	for _, r := range runs {
		free += len(r.Nodes)
		if free >= need {
			return end(r), free - need, true
		}
	}
	return 0, 0, false // unreachable: every job fits the machine
}

func (s *Scheduler) backfill(at time.Duration, start func(int, string)) {
	shadow, spare, ok := s.Reservation(at)
	if !ok {
		return
	}
	for i := 1; i < len(s.queue); {
		j := s.queue[i]
		if !s.fits(j) {
			i++
			continue
		}
		v := Speed(s.speeds(s.fastestIdle(j.Tasks)), j.Balanced)
		switch {
		case at+Runtime(j.Estimate, v) <= shadow:
			start(i, fmt.Sprintf("fifo-bf: backfilled, estimated end by the head's shadow time %v", shadow))
		case j.Tasks <= spare:
			spare -= j.Tasks
			start(i, fmt.Sprintf("fifo-bf: backfilled on nodes spare at the head's shadow time %v", shadow))
		default:
			i++
		}
	}
}

func (s *Scheduler) fits(j Job) bool { return j.Tasks <= s.nIdle }

// fastestIdle returns the k fastest idle nodes, fastest first.
func (s *Scheduler) fastestIdle(k int) []int {
	nodes := make([]int, 0, k)
	for _, n := range s.order {
		if len(nodes) == k {
			break
		}
		if s.idle[n] {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

func (s *Scheduler) speeds(nodes []int) []float64 {
	out := make([]float64, len(nodes))
	for i, n := range nodes {
		out[i] = s.cfg.Speeds[n]
	}
	return out
}

// start removes queue[i], places it on the fastest idle nodes and records
// it as running.
func (s *Scheduler) start(i int, at time.Duration, why string) Start {
	j := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	nodes := s.fastestIdle(j.Tasks)
	for _, n := range nodes {
		s.idle[n] = false
	}
	s.nIdle -= len(nodes)
	v := Speed(s.speeds(nodes), j.Balanced)
	st := Start{Job: j, At: at, Nodes: nodes, Speed: v, EstimatedEnd: at + Runtime(j.Estimate, v), Why: why}
	s.running[j.ID] = &running{st}
	st.Nodes = slices.Clone(nodes) // the caller's copy
	return st
}
