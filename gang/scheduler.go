package gang

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cosched/cosched/internal/freelist"
	"github.com/cosched/cosched/internal/idtable"
	"github.com/cosched/cosched/internal/sizepool"
)

// Errors returned for inputs the core rejects. Check with errors.Is.
var (
	ErrDuplicateJob  = errors.New("job id already known")
	ErrUnknownJob    = errors.New("unknown job")
	ErrJobTooWide    = errors.New("job needs more processors than the machine has")
	ErrJobTooBig     = errors.New("job needs more memory per processor than a column has")
	ErrInvalidJob    = errors.New("invalid job")
	ErrTimeBackwards = errors.New("time went backwards")
)

// jobState is the core's record of a job it knows: queued or running.
type jobState struct {
	Job
	seq     uint64 // arrival order; breaks every tie
	running bool
	killed  bool // a Kill decision was issued
	row     int
	cols    []int
	own     []int // with ReuseColumns: cols' storage, from the column pool
	start   time.Duration
	estEnd  time.Duration // start + span (the estimate, dilated by MPL)
	resv    time.Duration // conservative: reserved start while queued
	resvRow int           // conservative: the row of the reservation
}

func sortBySeq(js []*jobState) {
	slices.SortFunc(js, func(a, b *jobState) int { return cmp.Compare(a.seq, b.seq) })
}

// Scheduler is the core state machine. It is not safe for concurrent use:
// its owner (the simulator's event loop, the controller's goroutine) calls
// it from one goroutine.
type Scheduler struct {
	cfg     Config
	policy  policy
	now     time.Duration
	seq     uint64
	jobs    idtable.Table[JobID, jobState]
	spare   freelist.List[jobState] // finished jobs' records, reused: no allocation per job once warm
	queue   []*jobState             // waiting jobs in arrival order: a window of qbuf
	qbuf    []*jobState             // the queue's storage, from its start
	rows    []row
	colMem  []int64         // memory in use on each column, summed over rows
	colCap  []int64         // memory of each column when set (SetColumnMemory); nil: none set
	capped  int             // columns with colCap set
	offline []uint64        // bit c set: column c is out of service
	online  int             // columns in service
	alt     map[JobID][]int // alternative scheduling: extra rows a job runs in
	curRow  int             // the row of the current slice
	out     []Decision      // Schedule's result buffer, reused
	reuse   bool            // ReuseColumns: a job's columns are reused once it finished
	// colPool holds, with ReuseColumns, finished jobs' column storage, so
	// storage follows the running jobs, not the records: records (queued
	// jobs' included) that each grew to the widest job they ever held were
	// most of the core's memory on a long trace.
	colPool sizepool.Pool[int]

	altScratch [][]uint64 // per row: columns taken by alternates
	ageScratch []*jobState
	runScratch []*jobState
}

// policy is a queue policy's hooks into the scheduler. Each is called with
// the scheduler's time already advanced to now.
type policy interface {
	// submitted is called after j was appended to the queue.
	submitted(s *Scheduler, j *jobState)
	// removed is called after j left the queue or a row. early reports that
	// a running job ended before its estimate.
	removed(s *Scheduler, j *jobState, wasRunning, early bool)
	// started is called after a queued job j started.
	started(s *Scheduler, j *jobState)
	// schedule starts whatever the policy allows now, via s.start.
	schedule(s *Scheduler)
	// settle brings deferred bookkeeping up to date before a query, exactly
	// as the next pass at the same instant would.
	settle(s *Scheduler)
	// capacityChanged is called after columns went offline or online.
	capacityChanged(s *Scheduler)
	// wakeup reports the next instant after now the policy needs a pass.
	wakeup(s *Scheduler) (time.Duration, bool)
	// explain says why queued job j waits.
	explain(s *Scheduler, j *jobState) Explanation
}

// New returns a Scheduler for cfg, or every problem with cfg.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg:        cfg,
		rows:       make([]row, cfg.MPL),
		colMem:     make([]int64, cfg.Machine.Processors),
		alt:        map[JobID][]int{},
		curRow:     cfg.MPL - 1, // so the first slice is row 0
		altScratch: make([][]uint64, cfg.MPL),
		offline:    make([]uint64, (cfg.Machine.Processors+63)/64),
		online:     cfg.Machine.Processors,
	}
	for i := range s.rows {
		s.rows[i] = newRow(cfg.Machine.Processors)
		s.altScratch[i] = make([]uint64, len(s.rows[i].cols.words))
	}
	switch cfg.Policy {
	case FCFS:
		s.policy = &easy{noBackfill: true}
	case EASY:
		s.policy = &easy{}
	case EASYSJBF:
		s.policy = &easy{shortestFirst: true}
	case Conservative:
		s.policy = newConservative(cfg.Machine.Processors, cfg.MPL)
	case FCFSBF, SJFBF, PriorityBF, LXFWBF:
		s.policy = newPriorityBF(cfg)
	}
	return s, nil
}

// Config returns the configuration the scheduler was built with.
func (s *Scheduler) Config() Config { return s.cfg }

func (s *Scheduler) advance(now time.Duration) error {
	if now < s.now {
		return fmt.Errorf("gang: %w: %v after %v", ErrTimeBackwards, now, s.now)
	}
	s.now = now
	return nil
}

// Submit queues a job arriving at now.
func (s *Scheduler) Submit(j Job, now time.Duration) error {
	if err := s.validate(&j, now); err != nil {
		return err
	}
	if err := s.advance(now); err != nil {
		return err
	}
	s.seq++
	// A finished job's record, if any, zeroed by recycle, or a new one: so
	// three fields, not a whole jobState literal (which Go builds aside
	// and copies in, 200 bytes twice).
	js := s.spare.Get()
	js.Job, js.seq, js.resv = j, s.seq, -1
	s.jobs.Put(j.ID, js)
	s.enqueue(js)
	s.policy.submitted(s, js)
	return nil
}

func (s *Scheduler) validate(j *Job, now time.Duration) error {
	var problem error
	switch {
	case j.Processors < 1:
		problem = fmt.Errorf("%w: needs %d processors", ErrInvalidJob, j.Processors)
	case j.Processors > s.cfg.Machine.Processors:
		problem = fmt.Errorf("%w: needs %d, machine has %d", ErrJobTooWide, j.Processors, s.cfg.Machine.Processors)
	case j.Estimate < 0:
		problem = fmt.Errorf("%w: negative estimate %v", ErrInvalidJob, j.Estimate)
	case j.Memory < 0:
		problem = fmt.Errorf("%w: negative memory %d", ErrInvalidJob, j.Memory)
	case s.cfg.Machine.MemoryPerProcessor > 0 && j.Memory > s.cfg.Machine.MemoryPerProcessor:
		problem = fmt.Errorf("%w: needs %d bytes per processor, a column has %d", ErrJobTooBig, j.Memory, s.cfg.Machine.MemoryPerProcessor)
	case j.Submit > now:
		problem = fmt.Errorf("%w: submit time %v is after now (%v)", ErrInvalidJob, j.Submit, now)
	case s.jobs.Get(j.ID) != nil:
		problem = ErrDuplicateJob
	}
	if problem != nil {
		return fmt.Errorf("gang: job %d: %w", j.ID, problem)
	}
	return nil
}

// Finished reports that a job ended at now: it completed, failed, was killed
// or cancelled. A queued job is removed from the queue; a running job
// releases its columns.
func (s *Scheduler) Finished(id JobID, now time.Duration) error {
	js := s.jobs.Get(id)
	if js == nil {
		return fmt.Errorf("gang: job %d: %w", id, ErrUnknownJob)
	}
	if err := s.advance(now); err != nil {
		return err
	}
	s.jobs.Delete(id)
	if !js.running {
		s.dropQueued(js)
		s.policy.removed(s, js, false, false)
		s.recycle(js)
		return nil
	}
	r := &s.rows[js.row]
	r.removeRunning(js)
	r.cols.give(s.onlineOnly(js.cols))
	if js.Memory > 0 {
		for _, c := range js.cols {
			s.colMem[c] -= js.Memory
		}
	}
	// Its alternates end with it; the next pass recomputes the others
	// without reporting these.
	if len(s.alt) > 0 { // only alternative scheduling fills it: no map call per end
		delete(s.alt, id)
	}
	s.policy.removed(s, js, true, now < js.estEnd)
	s.recycle(js)
	return nil
}

// Resume puts back a job that is already running at row on cols since
// start: a caller that lost its core (a controller restarted from its
// journal) rebuilds the matrix with the placements it had recorded. The
// columns may be offline (their nodes have not come back yet); they must
// not be held by another job of the row. No decision is returned for it;
// the next pass recomputes alternates.
func (s *Scheduler) Resume(j Job, row int, cols []int, start, now time.Duration) error {
	if err := s.validate(&j, now); err != nil {
		return err
	}
	switch {
	case row < 0 || row >= len(s.rows):
		return fmt.Errorf("gang: resume job %d: %w: row %d outside 0-%d", j.ID, ErrInvalidJob, row, len(s.rows)-1)
	case len(cols) != j.Processors:
		return fmt.Errorf("gang: resume job %d: %w: %d columns for %d processors", j.ID, ErrInvalidJob, len(cols), j.Processors)
	case start > now:
		return fmt.Errorf("gang: resume job %d: %w: start %v is after now (%v)", j.ID, ErrInvalidJob, start, now)
	}
	seen := map[int]bool{}
	for _, c := range cols {
		if c < 0 || c >= s.cfg.Machine.Processors || seen[c] || s.held(row, c) {
			return fmt.Errorf("gang: resume job %d: %w: column %d outside the machine, repeated or held in row %d", j.ID, ErrInvalidJob, c, row)
		}
		seen[c] = true
	}
	if err := s.advance(now); err != nil {
		return err
	}
	s.seq++
	js := &jobState{Job: j, seq: s.seq, resv: -1, running: true, row: row, cols: slices.Clone(cols), start: start}
	js.estEnd = start + s.span(js)
	js.killed = s.cfg.EnforceLimits && js.estEnd <= now && js.Extend
	s.rows[row].cols.takeThese(s.onlineOnly(js.cols))
	if j.Memory > 0 {
		for _, c := range js.cols {
			s.colMem[c] += j.Memory
		}
	}
	s.jobs.Put(j.ID, js)
	s.rows[row].addRunning(js)
	s.policy.capacityChanged(s) // the policies' books count running jobs
	return nil
}

// recycle keeps a finished job's record for the next arrival: no
// structure holds it once the policy has dropped it (scratch slices are
// refilled before they are read). Its columns went out in a Start
// decision, which is the caller's to keep, unless ReuseColumns said
// otherwise: then they go back to the column pool. It is zeroed here, not
// by Submit, so that a spare record holds no pointers (to a job's strings
// and columns) while it waits; Submit relies on its being zero.
func (s *Scheduler) recycle(js *jobState) {
	s.colPool.Put(js.own)
	*js = jobState{}
	s.spare.Put(js)
}

// ReuseColumns makes a Start decision's Columns valid only until the job's
// Finished call, after which the core reuses them for a later job; by
// default they are the caller's to keep. A simulator that acts on each
// decision at once (and copies what it keeps) so allocates nothing per
// job: fresh memory for every job's columns was a tenth of a run on KTH.
func (s *Scheduler) ReuseColumns() { s.reuse = true }

func (s *Scheduler) dropQueued(js *jobState) {
	for i, q := range s.queue {
		if q == js {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			return
		}
	}
}

// Schedule runs a scheduling pass at now and returns the decisions to carry
// out, in an order that is safe to execute one by one: kills, then ended
// alternates, then starts (which may take a slot an alternate just left),
// then new alternates. The returned slice is reused by the next call: the
// caller must act on it (or copy it) before calling Schedule again. Columns
// slices are the caller's to keep and must not be modified.
func (s *Scheduler) Schedule(now time.Duration) ([]Decision, error) {
	if err := s.advance(now); err != nil {
		return nil, err
	}
	s.out = s.out[:0]
	if s.cfg.EnforceLimits {
		s.killOverdue()
	}
	starts := len(s.out)
	if len(s.queue) > 0 {
		s.policy.schedule(s)
	}
	if s.cfg.AlternativeScheduling && s.cfg.MPL > 1 {
		ended, added := s.alternates()
		s.out = slices.Insert(s.out, starts, ended...)
		s.out = append(s.out, added...)
	}
	return s.out, nil
}

func (s *Scheduler) killOverdue() {
	for ri := range s.rows {
		for _, j := range s.rows[ri].running {
			if j.estEnd > s.now {
				break // sorted by estimated end
			}
			if !j.killed {
				j.killed = true // no wakeup for it again, killed or extended
				if j.Extend {
					continue
				}
				s.out = append(s.out, Decision{Kind: Kill, Job: j.ID, Row: j.row,
					Why: Explanation{Rule: RuleLimitReached, At: j.estEnd}})
			}
		}
	}
}

// start moves queued job j into row r now, on the lowest free columns that
// have room for its memory; the caller has checked that it fits. Policies
// call it from schedule; it does not compact the queue (see compactQueue).
func (s *Scheduler) start(j *jobState, r int, why Explanation) {
	row := &s.rows[r]
	j.running = true
	j.row = r
	if s.memoryBound(j) {
		s.memoryColumns(j, r, true)
	} else if s.reuse {
		j.own = s.colPool.Get(j.Processors)
		j.cols = row.cols.takeInto(j.own, j.Processors)
	} else {
		j.cols = row.cols.take(j.Processors)
	}
	if j.Memory > 0 {
		for _, c := range j.cols {
			s.colMem[c] += j.Memory
		}
	}
	j.start = s.now
	j.estEnd = s.now + s.span(j)
	row.addRunning(j)
	s.out = append(s.out, Decision{Kind: Start, Job: j.ID, Row: r, Columns: j.cols, Why: why})
	s.policy.started(s, j)
}

// enqueue appends js to the queue. The queue's head moves forward in its
// storage as jobs start (dropHead); once the storage's end is reached, the
// queue moves back to its start if it takes at most half of it, else to
// new storage twice as large. Each job is so moved a constant number of
// times on average, and the storage stops growing with the queue's
// largest length.
func (s *Scheduler) enqueue(js *jobState) {
	if n := len(s.queue); n == cap(s.queue) { // the queue reaches the storage's end
		if cap(s.qbuf) == 0 || 2*n > cap(s.qbuf) {
			s.qbuf = make([]*jobState, 0, max(2*n, 16))
			s.queue = append(s.qbuf, s.queue...)
		} else {
			copy(s.qbuf[:n], s.queue)
			clear(s.qbuf[n:cap(s.qbuf)])
			s.queue = s.qbuf[:n]
		}
	}
	s.queue = append(s.queue, js)
}

// dropHead removes the first n queued jobs, which a pass just started.
func (s *Scheduler) dropHead(n int) {
	if n == 0 {
		return
	}
	clear(s.queue[:n]) // let the GC have them once they end
	// Reslicing moves nothing; enqueue reclaims the space later.
	s.queue = s.queue[n:]
}

// runnable returns the queued jobs that fit the columns in service, in
// arrival order: normally the queue itself. A job wider than the columns in
// service (nodes left) waits aside, without blocking the queue, until
// enough come back.
func (s *Scheduler) runnable() []*jobState {
	if s.online == s.cfg.Machine.Processors {
		return s.queue
	}
	s.runScratch = s.runScratch[:0]
	for _, j := range s.queue {
		if j.Processors <= s.online {
			s.runScratch = append(s.runScratch, j)
		}
	}
	return s.runScratch
}

// compactQueue removes the jobs started during a pass from anywhere in the
// queue, keeping arrival order.
func (s *Scheduler) compactQueue() {
	n := 0
	for n < len(s.queue) && !s.queue[n].running {
		n++ // nothing moves before the first started job
	}
	for _, j := range s.queue[n:] {
		if !j.running {
			s.queue[n] = j
			n++
		}
	}
	clear(s.queue[n:])
	s.queue = s.queue[:n]
}

// NextWakeup returns the next instant after the last call's now at which the
// core wants Schedule called even if no job arrives or ends: a conservative
// reservation, or (with EnforceLimits) a running job's time limit. ok is
// false when there is none.
func (s *Scheduler) NextWakeup() (t time.Duration, ok bool) {
	s.policy.settle(s)
	t, ok = s.policy.wakeup(s)
	if s.cfg.EnforceLimits {
		for ri := range s.rows {
			for _, j := range s.rows[ri].running {
				if j.killed {
					continue
				}
				if j.estEnd > s.now && (!ok || j.estEnd < t) {
					t, ok = j.estEnd, true
				}
				break // the first not yet killed has the earliest limit
			}
		}
	}
	return t, ok
}

// Explain tells why job id is waiting, as of the last call.
func (s *Scheduler) Explain(id JobID) Explanation {
	js := s.jobs.Get(id)
	if js == nil || js.running {
		return Explanation{Rule: RuleNotQueued}
	}
	s.policy.settle(s)
	if js.Processors > s.online {
		return Explanation{Rule: RuleNoCapacity, Procs: js.Processors, Free: s.online}
	}
	return s.policy.explain(s, js)
}

// JobStatus is a read-only view of a job the core knows.
type JobStatus struct {
	Job
	Running bool
	Row     int
	Columns []int
	Start   time.Duration
	// Reservation is a queued job's reserved start (conservative), else -1.
	Reservation time.Duration
}

// Status returns the state of a queued or running job.
func (s *Scheduler) Status(id JobID) (JobStatus, bool) {
	s.policy.settle(s)
	js := s.jobs.Get(id)
	if js == nil {
		return JobStatus{}, false
	}
	st := JobStatus{Job: js.Job, Running: js.running, Reservation: -1}
	if js.running {
		st.Row, st.Columns, st.Start = js.row, append([]int(nil), js.cols...), js.start
	} else if js.resv >= 0 {
		st.Reservation = js.resv
	}
	return st, true
}

// Queued returns the IDs of waiting jobs in queue order.
func (s *Scheduler) Queued() []JobID {
	ids := make([]JobID, len(s.queue))
	for i, j := range s.queue {
		ids[i] = j.ID
	}
	return ids
}

// Running returns the number of running jobs and the processors they use.
func (s *Scheduler) Running() (jobs, processors int) {
	for ri := range s.rows {
		jobs += len(s.rows[ri].running)
		processors += s.cfg.Machine.Processors - s.rows[ri].cols.free
	}
	return jobs, processors
}

// Alternates returns the rows besides its own in which a running job also
// runs (alternative scheduling), in row order.
func (s *Scheduler) Alternates(id JobID) []int {
	return slices.Clone(s.alt[id])
}
