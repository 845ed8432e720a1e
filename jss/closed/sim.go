package closed

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Config is one replication of the closed network.
type Config struct {
	// Procs is P, the number of processors (at least 1).
	Procs int
	// Jobs is N, the number of circulating jobs (at least 1).
	Jobs int
	// Policy schedules the processor queues.
	Policy Policy
	// Service is the distribution of a job's service time; IOMean is k,
	// the mean of the exponential I/O service time. Both are unused when
	// Draws is set.
	Service Service
	IOMean  float64
	// Warmup is the number of processor completions discarded before
	// measuring; Completions the number measured (at least 1).
	Warmup, Completions int
	// Seed selects the random sequence: equal configurations give equal
	// results.
	Seed uint64
	// Ties breaks ties between equally short queues.
	Ties Ties
	// Draws, if set, supplies sizes and times instead of the seeded
	// distributions (tests inject fixed ones).
	Draws Draws
	// Trace, if set, is called with every event as it happens.
	Trace func(Event)
}

// Draws supplies a replication's random quantities; job is the job's
// number, 0 … N−1. Size is called each time a job arrives at the processor
// queues and must return 1 … procs; Service when it starts and IO when it
// enters I/O service must return positive finite times.
type Draws interface {
	Size(job, procs int) int
	Service(job int) float64
	IO(job int) float64
}

// randomDraws are the model's distributions on a seeded generator.
type randomDraws struct {
	r   *rand.Rand
	svc Service
	io  float64
}

func (d randomDraws) Size(_, procs int) int { return 1 + d.r.IntN(procs) }
func (d randomDraws) Service(int) float64   { return d.svc.Draw(d.r) }
func (d randomDraws) IO(int) float64        { return d.r.ExpFloat64() * d.io }

// EventKind names what happened to a job.
type EventKind string

// The events, in a job's cycle.
const (
	Arrive  EventKind = "arrive"   // at the processor queues, tasks assigned
	Begin   EventKind = "start"    // all its tasks start
	End     EventKind = "end"      // its tasks end; it joins the I/O queue
	IOBegin EventKind = "io-start" // its I/O service starts
	IOEnd   EventKind = "io-end"   // its I/O service ends
)

// Event is one step of a simulation, for Config.Trace.
type Event struct {
	Time  float64
	Kind  EventKind
	Job   int
	Procs []int // Arrive, Begin, End: the job's processors (do not modify)
}

// Result is what one replication measured in its window (T0, T1] (see the
// package documentation for the definitions).
type Result struct {
	MeanResponse float64 `json:"mean_response"`
	MeanCycle    float64 `json:"mean_cycle"`
	Throughput   float64 `json:"throughput"`
	CPUUtil      float64 `json:"cpu_util"`
	IOUtil       float64 `json:"io_util"`
	// Responses and Cycles count the samples of the means.
	Responses int `json:"responses"`
	Cycles    int `json:"cycles"`
	// T0 and T1 bound the measurement window.
	T0 float64 `json:"t0"`
	T1 float64 `json:"t1"`
}

// Limits of a run. Processors and jobs are allocated (a queue per
// processor, a record per job); completions and replications are time.
const (
	MaxProcs        = 1 << 16
	MaxJobs         = 1 << 20
	MaxCompletions  = 1_000_000_000
	MaxReplications = 100_000
)

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Procs < 1 || c.Procs > MaxProcs {
		errs = append(errs, fmt.Errorf("procs %d: must be from 1 to %d", c.Procs, MaxProcs))
	}
	if c.Jobs < 1 || c.Jobs > MaxJobs {
		errs = append(errs, fmt.Errorf("jobs %d: must be from 1 to %d", c.Jobs, MaxJobs))
	}
	if !slices.Contains(Policies(), c.Policy) {
		errs = append(errs, fmt.Errorf("policy %q: unknown (valid: %s)", c.Policy, PolicyNames()))
	}
	if c.Draws == nil {
		if err := c.Service.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("service: %w", err))
		}
		if !(c.IOMean > 0) || math.IsInf(c.IOMean, 1) {
			errs = append(errs, fmt.Errorf("I/O mean %g: must be positive and finite", c.IOMean))
		}
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warm-up %d: must not be negative", c.Warmup))
	}
	if c.Completions < 1 || c.Completions > MaxCompletions {
		errs = append(errs, fmt.Errorf("completions %d: must be from 1 to %d", c.Completions, MaxCompletions))
	}
	if c.Warmup > MaxCompletions {
		errs = append(errs, fmt.Errorf("warm-up %d: must be at most %d", c.Warmup, MaxCompletions))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closed: %w", err)
	}
	return nil
}

// event kinds in the heap, in their order at equal times.
const (
	evProcDone = iota
	evIODone
)

type event struct {
	t    float64
	kind int
	seq  uint64
	job  int
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type jobState struct {
	procs   []int
	arrived float64 // at the processor queues, this cycle
}

// sim is one replication's state.
type sim struct {
	cfg    *Config
	rng    *rand.Rand
	draws  Draws
	now    float64
	events eventHeap
	seq    uint64

	jobs     []jobState
	queueLen []int
	busy     []bool
	nBusy    int   // busy processors
	waiting  []int // jobs in the processor queues, in order of arrival
	ioQueue  []int // jobs waiting for the I/O unit, FIFO
	ioBusy   bool
	prefer   []int // scratch permutation for TiesRandom

	done      int // processor completions
	measuring bool
	t0        float64
	cpuArea   float64
	ioArea    float64
	respSum   float64
	nResp     int
	cycleSum  float64
	nCycle    int
	drawError error
}

// Run simulates one replication. It returns an error for an invalid
// configuration, a bad draw from Config.Draws, or when ctx is done.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	s := &sim{
		cfg:       &cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0x636c6f736564)), // "closed"
		jobs:      make([]jobState, cfg.Jobs),
		queueLen:  make([]int, cfg.Procs),
		busy:      make([]bool, cfg.Procs),
		measuring: cfg.Warmup == 0,
	}
	s.draws = cfg.Draws
	if s.draws == nil {
		s.draws = randomDraws{r: s.rng, svc: cfg.Service, io: cfg.IOMean}
	}
	for j := range cfg.Jobs {
		s.arrive(j)
	}
	target := cfg.Warmup + cfg.Completions
	for step := 0; ; step++ {
		if step%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return Result{}, fmt.Errorf("closed: %w", err)
			}
		}
		s.schedule()
		if s.drawError != nil {
			return Result{}, s.drawError
		}
		if len(s.events) == 0 { // cannot happen: the oldest waiting job can always start on idle processors
			return Result{}, errors.New("closed: no event pending (internal error)")
		}
		s.instant()
		if s.drawError != nil {
			return Result{}, s.drawError
		}
		if s.done >= target {
			break
		}
		if !s.measuring && s.done >= cfg.Warmup {
			s.measuring, s.t0 = true, s.now
		}
	}
	w := s.now - s.t0
	res := Result{
		Throughput: float64(s.nResp) / w,
		CPUUtil:    s.cpuArea / (float64(cfg.Procs) * w),
		IOUtil:     s.ioArea / w,
		Responses:  s.nResp,
		Cycles:     s.nCycle,
		T0:         s.t0,
		T1:         s.now,
	}
	if s.nResp > 0 {
		res.MeanResponse = s.respSum / float64(s.nResp)
	}
	if s.nCycle > 0 {
		res.MeanCycle = s.cycleSum / float64(s.nCycle)
	}
	return res, nil
}

func (s *sim) trace(kind EventKind, job int, procs []int) {
	if s.cfg.Trace != nil {
		s.cfg.Trace(Event{Time: s.now, Kind: kind, Job: job, Procs: procs})
	}
}

func (s *sim) push(t float64, kind, job int) {
	s.seq++
	heap.Push(&s.events, event{t: t, kind: kind, seq: s.seq, job: job})
}

// instant advances to the next event time and handles every event of it.
func (s *sim) instant() {
	t := s.events[0].t
	if s.measuring {
		dt := t - s.now
		s.cpuArea += float64(s.nBusy) * dt
		if s.ioBusy {
			s.ioArea += dt
		}
	}
	s.now = t
	for len(s.events) > 0 && s.events[0].t == t {
		e := heap.Pop(&s.events).(event)
		switch e.kind {
		case evProcDone:
			s.procDone(e.job)
		case evIODone:
			s.ioDone(e.job)
		}
	}
}

// arrive puts job j in the processor queues with a fresh size.
func (s *sim) arrive(j int) {
	size := s.draws.Size(j, s.cfg.Procs)
	if size < 1 || size > s.cfg.Procs {
		s.fail(fmt.Errorf("closed: job %d drew size %d: want 1 … %d", j, size, s.cfg.Procs))
		size = 1
	}
	var prefer []int
	if s.cfg.Ties == TiesRandom {
		if s.prefer == nil {
			s.prefer = make([]int, s.cfg.Procs)
		}
		for q := range s.prefer {
			s.prefer[q] = q
		}
		s.rng.Shuffle(len(s.prefer), func(a, b int) { s.prefer[a], s.prefer[b] = s.prefer[b], s.prefer[a] })
		prefer = s.prefer
	}
	procs := Assign(s.queueLen, size, prefer)
	for _, q := range procs {
		s.queueLen[q]++
	}
	s.jobs[j] = jobState{procs: procs, arrived: s.now}
	s.waiting = append(s.waiting, j)
	s.trace(Arrive, j, procs)
}

// schedule runs a scheduling pass and starts the jobs it chooses.
func (s *sim) schedule() {
	if len(s.waiting) == 0 {
		return
	}
	ws := make([]Waiting, len(s.waiting))
	for i, j := range s.waiting {
		ws[i] = Waiting{Procs: s.jobs[j].procs}
	}
	starts := s.cfg.Policy.Start(s.busy, ws)
	if len(starts) == 0 {
		return
	}
	gone := make([]bool, len(s.waiting))
	for _, i := range starts {
		j := s.waiting[i]
		gone[i] = true
		for _, q := range s.jobs[j].procs {
			s.busy[q] = true
		}
		s.nBusy += len(s.jobs[j].procs)
		d := s.positive("service time", j, s.draws.Service(j))
		s.push(s.now+d, evProcDone, j)
		s.trace(Begin, j, s.jobs[j].procs)
	}
	kept := s.waiting[:0]
	for i, j := range s.waiting {
		if !gone[i] {
			kept = append(kept, j)
		}
	}
	s.waiting = kept
}

func (s *sim) procDone(j int) {
	js := &s.jobs[j]
	for _, q := range js.procs {
		s.busy[q] = false
		s.queueLen[q]--
	}
	s.nBusy -= len(js.procs)
	s.done++
	if s.measuring {
		s.respSum += s.now - js.arrived
		s.nResp++
	}
	s.trace(End, j, js.procs)
	s.ioQueue = append(s.ioQueue, j)
	s.startIO()
}

func (s *sim) ioDone(j int) {
	s.ioBusy = false
	s.trace(IOEnd, j, nil)
	if s.measuring {
		s.cycleSum += s.now - s.jobs[j].arrived
		s.nCycle++
	}
	s.arrive(j)
	s.startIO()
}

// startIO starts the next I/O service if the unit is idle.
func (s *sim) startIO() {
	if s.ioBusy || len(s.ioQueue) == 0 {
		return
	}
	j := s.ioQueue[0]
	s.ioQueue = s.ioQueue[1:]
	s.ioBusy = true
	d := s.positive("I/O time", j, s.draws.IO(j))
	s.push(s.now+d, evIODone, j)
	s.trace(IOBegin, j, nil)
}

// positive checks a drawn time, recording the first bad one.
func (s *sim) positive(what string, j int, d float64) float64 {
	if !(d > 0) || math.IsInf(d, 1) {
		s.fail(fmt.Errorf("closed: job %d drew %s %g: want a positive finite time", j, what, d))
		return 1
	}
	return d
}

func (s *sim) fail(err error) {
	if s.drawError == nil {
		s.drawError = err
	}
}
