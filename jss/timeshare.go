package jss

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/verify"
	"github.com/cosched/cosched/sharing"
)

// Modes lists the sharing modes the simulator models, each with its
// execution model:
//   - sharing.Space: BF, space sharing with backfilling. Jobs run dedicated
//     (MPL 1) for their dedicated runtime; processes blocked in
//     communication leave their processors idle.
//   - sharing.Gang: BGS, backfilling gang scheduling. Rows rotate every
//     slice; a job's processes advance only in the slices of its rows (its
//     own and, with alternative scheduling, others'), with immediate
//     messages; each time a job is switched in costs JobSwitch.
//   - sharing.BCS: BCS, buffered coscheduling. Rows rotate every slice;
//     messages sent in slice k are buffered and delivered at the strobe that
//     ends it (at most h_max = slice × bandwidth bytes per node per slice,
//     the rest deferred); barriers complete at strobes; a processor whose
//     scheduled process is blocked (or which has none) runs another ready
//     local process (process-level slot reuse); each process switch costs
//     ProcessSwitch.
//
// sharing.Local (no coordination) has no model.
func Modes() []sharing.Mode { return []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS} }

// CheckMode reports whether the simulator models mode m; the error lists
// the modes it does.
func CheckMode(m sharing.Mode) error {
	if !slices.Contains(Modes(), m) {
		return fmt.Errorf("jss: mode %q has no simulator model (valid: space, gang, bcs)", m)
	}
	return nil
}

// ModelConfig configures a run of benchmark jobs under an execution model.
type ModelConfig struct {
	Mode sharing.Mode
	// Scheduler configures the core. BF forces MPL 1; BGS turns on
	// alternative scheduling; BCS leaves slot reuse to the process level.
	Scheduler gang.Config
	// Slice is the time slice δ (BGS, BCS).
	Slice time.Duration
	// JobSwitch is the cost of switching a job in (BGS).
	JobSwitch time.Duration
	// ProcessSwitch is the cost of a process context switch (BCS).
	ProcessSwitch time.Duration
	Network       bench.Network
	// Seed makes the compute-time draws of each job (with its number).
	Seed uint64
	// Check verifies every decision with gang/verify.
	Check bool
	// PFCFS parameterizes Scheduler.Policy "pfcfs" (BF only; the machine
	// size comes from Scheduler.Machine).
	PFCFS PFCFSConfig
	// Overheads are a real runtime's costs beyond the ideal model, set
	// from a calibrated machine profile; the zero value adds none.
	Overheads Overheads
}

// Overheads are costs a runtime pays that the ideal execution models leave
// out (docs/MODELS.md, "Calibrated overheads"). `cosched bench calibrate`
// measures them on a cluster; the zero value is the ideal model.
type Overheads struct {
	// Launch is a job's start-up cost: from its start until its processes
	// compute (spawning and connecting the ranks, and reporting the end).
	// It is taken from the job's own running time: BF runs a job for its
	// dedicated runtime plus Launch, BGS needs that much running time,
	// and under BCS each process spends Launch before its first compute.
	Launch time.Duration
	// Delivery (BCS) is how long after a strobe its deliveries and barrier
	// releases reach the processes (the runtime's heartbeat exchange and
	// transfer). Meanwhile a process they unblock is not ready, and its
	// node runs other ready processes. Less than the slice.
	Delivery time.Duration
	// SoloSync (BCS): a one-process job's iteration ends at a barrier that
	// completes at the next strobe, as any job's, which is what the
	// runtime does; false: a one-process job never waits for a strobe.
	SoloSync bool
	// Relay, when its MessageSize is set, is the network the processes'
	// messages actually see (measured relays) in dedicated runs (BF, BGS).
	// Network still picks each job's iterations (as the runtime's
	// benchmark jobs are given them) and sets BCS's h_max (the runtime's
	// bandwidth setting).
	Relay bench.Network
	// ComputeScale stretches every compute phase: a draw of d takes
	// d × ComputeScale of processor time (the runtime's work overshooting
	// its draw); 0 means 1. The jobs' useful computation (Compute, and so
	// processor utilization) stays the drawn time.
	ComputeScale float64
}

// IsZero reports whether o adds nothing to the ideal model.
func (o Overheads) IsZero() bool { return o == Overheads{} }

// DefaultModelConfig returns the BCS study's machine: 32 processors with
// 512 MB each, MPL 3, 50 ms slices, 1 ms job and 100 µs process context
// switches, 4 KB messages at 100 MB/s, EASY queue order.
func DefaultModelConfig(mode sharing.Mode) ModelConfig {
	return ModelConfig{
		Mode: mode,
		Scheduler: gang.Config{
			Machine: gang.Machine{Processors: 32, MemoryPerProcessor: 512 << 20},
			MPL:     3,
			Policy:  gang.EASY,
		},
		Slice:         50 * time.Millisecond,
		JobSwitch:     time.Millisecond,
		ProcessSwitch: 100 * time.Microsecond,
		Network:       bench.DefaultNetwork(),
		Seed:          1,
	}
}

// normalize applies the mode's fixed choices.
func (c ModelConfig) normalize() ModelConfig {
	switch c.Mode {
	case sharing.Space:
		c.Scheduler.MPL = 1
		c.Scheduler.AlternativeScheduling = false
	case sharing.Gang:
		c.Scheduler.AlternativeScheduling = true
	case sharing.BCS:
		c.Scheduler.AlternativeScheduling = false
	}
	return c
}

// Validate reports every problem at once.
func (c ModelConfig) Validate() error {
	var errs []error
	if err := CheckMode(c.Mode); err != nil {
		errs = append(errs, err)
	}
	if c.isPFCFS() {
		errs = append(errs, c.validatePFCFS()...)
	} else if err := c.Scheduler.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.Mode != sharing.Space && c.Slice <= 0:
		errs = append(errs, fmt.Errorf("slice %v must be positive", c.Slice))
	case c.Mode == sharing.Gang && c.Slice <= c.JobSwitch:
		// A job switched in every slice would spend it all switching.
		errs = append(errs, fmt.Errorf("slice %v must exceed the job context switch (%v), or gang-scheduled jobs make no progress", c.Slice, c.JobSwitch))
	case c.Mode == sharing.BCS && c.Slice <= c.ProcessSwitch:
		errs = append(errs, fmt.Errorf("slice %v must exceed the process context switch (%v), or processes make no progress", c.Slice, c.ProcessSwitch))
	}
	if c.JobSwitch < 0 || c.ProcessSwitch < 0 {
		errs = append(errs, errors.New("context switch costs must not be negative"))
	}
	if o := c.Overheads; o.Launch < 0 || o.Delivery < 0 || o.ComputeScale < 0 || o.ComputeScale > 10 || math.IsNaN(o.ComputeScale) {
		errs = append(errs, fmt.Errorf("overheads: launch %v and delivery %v must not be negative, compute scale %g must be in [0, 10]",
			o.Launch, o.Delivery, o.ComputeScale))
	}
	if r := c.Overheads.Relay; r.MessageSize > 0 {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("overheads: relay: %w", err))
		}
	}
	if c.Mode == sharing.BCS && c.Slice > 0 && c.Overheads.Delivery >= c.Slice {
		errs = append(errs, fmt.Errorf("delivery delay %v must be less than the slice %v", c.Overheads.Delivery, c.Slice))
	}
	if err := c.Network.Validate(); err != nil {
		errs = append(errs, err)
	}
	return joinErrs(errs)
}

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("jss: %w", errors.Join(errs...))
}

// ModelStats describes a modelled run beyond its per-job results.
type ModelStats struct {
	Jobs   int64
	Passes int64
	Slices int64 // time slices simulated (BGS, BCS)
	// Steps counts the model's units of work: process run segments and
	// strobe checks (BCS), job-slices (BGS), events (BF).
	Steps    int64
	Switches int64 // context switches: jobs switched in (BGS), processes (BCS)
	Reuses   int64 // BCS: switches to a process outside the slice's row
	Messages int64 // BCS: messages delivered
	// SlotTime is the matrix occupancy integrated over time: the sum over
	// time of (placed and alternate slots) / (MPL × processors), in seconds.
	SlotTime float64
	// Compute is the useful computation of the jobs that ended, summed over
	// their processes (their programs' total compute).
	Compute time.Duration
	// Executed is the computation the BCS model actually carried out; it
	// equals Compute once every job has ended (a consistency check).
	Executed time.Duration
	End      time.Duration
}

// programFor builds job's program: iterations chosen so that its dedicated
// runtime is close to its workload runtime.
func programFor(j *Job, cfg *ModelConfig) (*Program, error) {
	if j.Template == "" {
		return nil, fmt.Errorf("jss: job %d has no ⟨g,v,comm,sync⟩ template; the %s model runs benchmark jobs (generate a workload with `cosched sim gen`)", j.Number, cfg.Mode)
	}
	t, err := bench.ParseTemplate(j.Template)
	if err != nil {
		return nil, fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	n := bench.Iterations(t, j.Processors, cfg.Network, j.Runtime)
	p := NewProgram(t, j.Processors, n, ProgramSeed(cfg.Seed, j.Number))
	p.scale = cfg.Overheads.ComputeScale
	return p, nil
}

// ProgramSeed is the seed of the compute-time draws of job number in a
// run seeded with seed: a benchmark rank given it draws the same times.
func ProgramSeed(seed uint64, number int64) uint64 {
	return seed*0x9e3779b97f4a7c15 ^ uint64(number)
}

// ModelSource turns a workload of templated jobs into the jobs an execution
// model runs: each job's Runtime becomes its dedicated runtime (its program
// run alone), Compute its total compute time, and its estimate is exact.
type ModelSource struct {
	src Source
	cfg ModelConfig
}

// NewModelSource wraps src.
func NewModelSource(src Source, cfg ModelConfig) *ModelSource {
	return &ModelSource{src: src, cfg: cfg}
}

// Next implements Source.
func (m *ModelSource) Next() (Job, error) {
	j, err := m.src.Next()
	if err != nil {
		return j, err
	}
	prog, err := programFor(&j, &m.cfg)
	if err != nil {
		return j, err
	}
	net := m.cfg.Network
	if m.cfg.Overheads.Relay.MessageSize > 0 {
		net = m.cfg.Overheads.Relay
	}
	ded := prog.RunDedicated(net)
	j.Runtime, j.Estimate, j.Compute = ded.Runtime, ded.Runtime, ded.Compute
	if m.cfg.Mode == sharing.Space {
		// The event engine runs a job for its Runtime; RunModel reports
		// the dedicated runtime again.
		j.Runtime += m.cfg.Overheads.Launch
	}
	j.program = prog
	return j, nil
}

// RunModel simulates a workload of templated jobs under cfg.Mode and calls
// emit with each job's result when it ends. Every job's Runtime in the
// results is its dedicated runtime, so exec time / Runtime is its
// execution-time slowdown.
func RunModel(ctx context.Context, cfg ModelConfig, src Source, emit func(Result) error) (ModelStats, error) {
	cfg = cfg.normalize()
	if err := cfg.Validate(); err != nil {
		return ModelStats{}, err
	}
	msrc := NewModelSource(src, cfg)
	if cfg.Mode == sharing.Space {
		var compute time.Duration
		var slotTime float64
		procs := float64(cfg.Scheduler.Machine.Processors)
		if cfg.isPFCFS() {
			return cfg.runPFCFS(ctx, msrc, emit)
		}
		st, err := Run(ctx, Config{Scheduler: cfg.Scheduler, Check: cfg.Check}, msrc, func(r Result) error {
			r.Runtime -= cfg.Overheads.Launch
			compute += r.Compute
			slotTime += float64(r.Processors) / procs * (r.End - r.Start).Seconds()
			return emit(r)
		})
		ms := ModelStats{Jobs: st.Jobs, Passes: st.Passes, Steps: st.Events, Compute: compute, End: st.End, SlotTime: slotTime}
		return ms, err
	}
	core, err := gang.New(cfg.Scheduler)
	if err != nil {
		return ModelStats{}, fmt.Errorf("jss: %w", err)
	}
	e := &tsEngine{cfg: cfg, core: core, in: newArrivals(msrc), emit: emit, jobs: map[gang.JobID]*tsJob{}}
	if cfg.Check {
		e.check = verify.New(cfg.Scheduler.Machine, cfg.Scheduler.MPL)
	}
	if cfg.Mode == sharing.Gang {
		e.model = newBGSModel(&cfg)
	} else {
		e.model = newBCSModel(&cfg)
	}
	return e.run(ctx)
}

// tsJob is a job in a time-shared run.
type tsJob struct {
	Job
	seq     int64
	row     int
	cols    []int
	altRows []int
	start   time.Duration
	running bool
	done    bool
	end     time.Duration
	// BGS
	progress  time.Duration
	lastSlice int64
	// BCS
	bcs *bcsJobState
}

// sliceModel advances running jobs one time slice at a time.
type sliceModel interface {
	start(j *tsJob)
	alternate(j *tsJob, row int, on bool)
	finish(j *tsJob)
	// runSlice runs [t, t+slice) with row active and reports jobs that
	// completed, with their exact end times.
	runSlice(t time.Duration, row int, done func(*tsJob))
	stats(*ModelStats)
}

type tsEngine struct {
	cfg   ModelConfig
	core  *gang.Scheduler
	emit  func(Result) error
	check *verify.Checker
	model sliceModel

	jobs     map[gang.JobID]*tsJob
	in       arrivals
	ended    []*tsJob // completed in the last slice, not yet reported
	dirty    bool     // the core's state changed since its last pass
	running  int
	queued   int
	slots    int // placed and alternate slots in the matrix
	st       ModelStats
	slotFrac float64 // 1 / (MPL × processors)
}

func (e *tsEngine) run(ctx context.Context) (ModelStats, error) {
	δ := e.cfg.Slice
	e.slotFrac = 1 / float64(e.cfg.Scheduler.MPL*e.cfg.Scheduler.Machine.Processors)
	if err := e.in.pull(); err != nil {
		return e.st, err
	}
	var t time.Duration
	if e.in.ok {
		t = ceilTo(e.in.next.Submit, δ)
	}
	for {
		if e.st.Slices&0x3ff == 0 {
			if err := ctx.Err(); err != nil {
				return e.st, fmt.Errorf("jss: run stopped at %v: %w", t, err)
			}
		}
		if err := e.feed(t); err != nil {
			return e.st, err
		}
		if wake, ok := e.core.NextWakeup(); e.dirty || ok && wake <= t {
			if err := e.pass(t); err != nil {
				return e.st, err
			}
		}
		if e.running == 0 && e.queued == 0 {
			if !e.in.ok {
				break
			}
			t = ceilTo(e.in.next.Submit, δ) // idle: jump to the next arrival
			continue
		}
		row := e.core.Slice(t)
		e.model.runSlice(t, row, func(j *tsJob) { e.ended = append(e.ended, j) })
		e.st.Slices++
		e.st.SlotTime += float64(e.slots) * e.slotFrac * δ.Seconds()
		t += δ
	}
	e.model.stats(&e.st)
	if n := len(e.jobs); n > 0 {
		return e.st, fmt.Errorf("jss: run ended at %v with %d jobs never finished", e.st.End, n)
	}
	return e.st, nil
}

func ceilTo(t, δ time.Duration) time.Duration {
	if r := t % δ; r != 0 {
		return t + δ - r
	}
	return t
}

// feed reports to the core, in time order, the jobs that ended during the
// last slice and the jobs submitted up to t (ends first at equal times).
func (e *tsEngine) feed(t time.Duration) error {
	slices.SortFunc(e.ended, func(a, b *tsJob) int {
		if a.end != b.end {
			return int(a.end - b.end)
		}
		return int(a.seq - b.seq)
	})
	ended := e.ended
	for len(ended) > 0 || e.in.ok && e.in.next.Submit <= t {
		if len(ended) > 0 && (!e.in.ok || e.in.next.Submit > t || ended[0].end <= e.in.next.Submit) {
			if err := e.finish(ended[0]); err != nil {
				return err
			}
			ended = ended[1:]
			continue
		}
		if err := e.arrive(); err != nil {
			return err
		}
	}
	e.ended = e.ended[:0]
	return nil
}

func (e *tsEngine) arrive() error {
	j := &e.in.next
	if err := e.core.Submit(j.Job, j.Submit); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	if e.check != nil {
		if err := e.check.Submitted(j.Job); err != nil {
			return fmt.Errorf("jss: job %d: %w", j.Number, err)
		}
	}
	e.jobs[j.ID] = &tsJob{Job: *j, seq: e.in.seqOfNext(), lastSlice: -2}
	e.st.Jobs++
	e.queued++
	e.dirty = true
	return e.in.pull()
}

func (e *tsEngine) finish(j *tsJob) error {
	if err := e.core.Finished(j.ID, j.end); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	if e.check != nil {
		if err := e.check.Finished(j.ID); err != nil {
			return fmt.Errorf("jss: job %d: %w", j.Number, err)
		}
	}
	e.slots -= j.Processors * (1 + len(j.altRows))
	e.model.finish(j)
	delete(e.jobs, j.ID)
	e.running--
	e.dirty = true
	e.st.End = max(e.st.End, j.end)
	e.st.Compute += j.Compute
	return e.emit(Result{Job: j.Job, Seq: j.seq, Start: j.start, End: j.end})
}

func (e *tsEngine) pass(t time.Duration) error {
	e.dirty = false
	e.st.Passes++
	ds, err := e.core.Schedule(t)
	if err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	for i := range ds {
		d := &ds[i]
		j := e.jobs[d.Job]
		if j == nil {
			return fmt.Errorf("jss: core decided %v for a job the simulator does not know", d)
		}
		if e.check != nil {
			if err := e.check.Apply(d, t); err != nil {
				return fmt.Errorf("jss: invariant violated for job %d: %w", j.Number, err)
			}
		}
		switch d.Kind {
		case gang.Start:
			j.row, j.cols, j.start, j.running = d.Row, d.Columns, t, true
			e.queued--
			e.running++
			e.slots += j.Processors
			e.model.start(j)
		case gang.Alternate:
			j.altRows = append(j.altRows, d.Row)
			e.slots += j.Processors
			e.model.alternate(j, d.Row, true)
		case gang.AlternateEnd:
			j.altRows = slices.DeleteFunc(j.altRows, func(r int) bool { return r == d.Row })
			e.slots -= j.Processors
			e.model.alternate(j, d.Row, false)
		default:
			return fmt.Errorf("jss: decision %v is not supported by the %s model", d, e.cfg.Mode)
		}
	}
	return nil
}
