package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/strobe"
)

// ControllerConfig configures the controller role.
type ControllerConfig struct {
	Name   string
	Mode   Mode
	Slice  time.Duration // gang, bcs: the time slice δ
	MPL    int           // rows of the matrix (1 in space mode)
	Policy gang.Policy
	// Backfill configures the priority-backfill policies (reservations,
	// their mode, weights); the zero value is their default.
	Backfill gang.Backfill
	// Bandwidth (bytes per second per node; 0 = unlimited) sets BCS's
	// transfer budget per slice, h_max = Bandwidth × Slice.
	Bandwidth float64
	// MaxColumns bounds the processors the cluster can ever have; each
	// agent's processors take a block of columns when it first joins.
	MaxColumns int
	// Priority, when 1–99, runs the slice clock at SCHED_FIFO (root or
	// CAP_SYS_NICE) so slices start on time while ranks keep every CPU busy.
	Priority int
	Log      *zap.Logger
}

// Controller runs the scheduler core for the cluster: it owns the job
// table, maps matrix columns to agents' processors, sends strobes, and
// tells agents what to launch and kill. Its state is guarded by mu, held by
// its loop (Run) while it handles an event, and by its slice clock's
// real-time thread just long enough to pick the next row: the strobe goes
// out from that thread without waiting for the Go scheduler. Every other
// goroutine talks to the loop through do and post.
type Controller struct {
	cfg    ControllerConfig
	log    *zap.Logger
	core   *gang.Scheduler
	origin time.Time
	epoch  uint64
	sender *strobe.Sender

	events chan func()
	wg     sync.WaitGroup // link goroutines and the slice clock

	mu          sync.Mutex // guards everything below
	jobs        map[int64]*jobRecord
	order       []int64
	nextID      int64
	members     map[string]member.Meta // agents in the cluster
	links       map[string]*link       // open control connections
	dialing     map[string]bool        // agents a dial is in progress to
	blocks      map[string]int         // agent → first column of its block
	owners      []columnOwner          // column → agent processor
	nextCol     int
	seq         uint64
	memberEpoch uint64
	targets     []string
	ticker      *strobe.Ticker
	// stopped is closed when Run returns. It exists from construction, so
	// goroutines that talk to the controller before its loop starts (a
	// membership event) can always tell it has gone.
	stopped  chan struct{}
	stopOnce sync.Once
}

type columnOwner struct {
	agent string
	slot  int
}

// NewController builds a controller; sender sends its strobes (gang and
// bcs modes; nil otherwise).
func NewController(cfg ControllerConfig, sender *strobe.Sender, epoch uint64) (*Controller, error) {
	if cfg.MaxColumns <= 0 {
		cfg.MaxColumns = 1024
	}
	core, err := gang.New(gang.Config{
		Machine:               gang.Machine{Processors: cfg.MaxColumns},
		MPL:                   cfg.MPL,
		Policy:                cfg.Policy,
		Backfill:              cfg.Backfill,
		AlternativeScheduling: cfg.Mode == Gang,
		EnforceLimits:         true,
	})
	if err != nil {
		return nil, err
	}
	all := make([]int, cfg.MaxColumns)
	for i := range all {
		all[i] = i
	}
	if err := core.SetOffline(all, true, 0); err != nil { // columns come online as agents join
		return nil, err
	}
	return &Controller{
		cfg:     cfg,
		log:     cfg.Log.Named("controller"),
		core:    core,
		origin:  time.Now(),
		epoch:   epoch,
		sender:  sender,
		events:  make(chan func(), 256),
		stopped: make(chan struct{}),
		jobs:    map[int64]*jobRecord{},
		members: map[string]member.Meta{},
		links:   map[string]*link{},
		dialing: map[string]bool{},
		blocks:  map[string]int{},
		owners:  make([]columnOwner, cfg.MaxColumns),
	}, nil
}

// now is the core's clock: time since the controller started.
func (c *Controller) now() time.Duration { return time.Since(c.origin) }

// Run is the controller's loop; it returns when ctx is done, after closing
// every control connection.
func (c *Controller) Run(ctx context.Context) error {
	defer c.stop()
	if c.cfg.Mode.TimeShared() {
		t, err := strobe.NewTicker(strobe.TickerConfig{Period: c.cfg.Slice, Priority: c.cfg.Priority, SpinAhead: spinAhead(c.cfg.Slice)})
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.ticker = t
		c.mu.Unlock()
		// The ticker sleeps on absolute deadlines on its own OS thread and
		// sends each strobe from there.
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			_ = t.Run(ctx, c.strobe)
		}()
	}
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		select {
		case <-ctx.Done():
			c.stop() // first: dials backing off and callers waiting see it
			c.mu.Lock()
			for _, l := range c.links {
				l.close()
			}
			c.mu.Unlock()
			c.wg.Wait()
			return nil
		case f := <-c.events:
			c.mu.Lock()
			f()
			c.pass()
			c.rearm(wake)
			c.mu.Unlock()
		case <-wake.C:
			c.mu.Lock()
			c.pass()
			c.rearm(wake)
			c.mu.Unlock()
		}
	}
}

// stop marks the controller as gone. Idempotent.
func (c *Controller) stop() { c.stopOnce.Do(func() { close(c.stopped) }) }

// do runs f in the controller's goroutine and waits for it.
func (c *Controller) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case c.events <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopped:
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopped:
		return ErrStopped
	}
}

// ErrStopped is returned by calls to a controller that has shut down.
var ErrStopped = errors.New("controller stopped")

// post queues f for the controller's goroutine without waiting (for the
// control connections' readers). It gives up if the controller stopped.
func (c *Controller) post(f func()) {
	select {
	case c.events <- f:
	case <-c.stopped:
	}
}

func (c *Controller) rearm(wake *time.Timer) {
	d := time.Hour
	if t, ok := c.core.NextWakeup(); ok {
		d = max(t-c.now(), 0)
	}
	wake.Reset(d)
}

// strobe starts the next slice, on the slice clock's thread: the core
// picks the row, every agent hears it.
func (c *Controller) strobe(tk strobe.Tick) {
	c.mu.Lock()
	row := c.core.Slice(c.now())
	c.seq++
	seq, targets, epoch := c.seq, c.targets, c.memberEpoch // targets is never modified in place
	c.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	sent, err := c.sender.Strobe(targets, seq, row, epoch, tk.Deadline)
	if err != nil {
		c.log.Warn("strobe", zap.Uint64("seq", seq), zap.Error(err))
	}
	c.ticker.Sent(tk, sent)
}

// membersChanged recomputes the strobe targets; the next strobe carries
// the new member epoch, so changes take effect at a slice boundary.
func (c *Controller) membersChanged() {
	c.memberEpoch++
	targets := make([]string, 0, len(c.links)) // a new slice: the clock may be reading the old one
	for _, name := range slices.Sorted(mapKeys(c.links)) {
		targets = append(targets, c.members[name].StrobeAddr)
	}
	c.targets = targets
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// MemberJoined tells the controller an agent joined (or updated its
// metadata): it opens a control connection to it.
func (c *Controller) MemberJoined(m member.Meta) {
	c.post(func() {
		c.members[m.Name] = m
		if _, ok := c.links[m.Name]; ok || c.dialing[m.Name] {
			return // one control connection per agent
		}
		c.dialing[m.Name] = true
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.dial(m)
		}()
	})
}

// MemberLeft tells the controller an agent left or failed.
func (c *Controller) MemberLeft(name string) {
	c.post(func() { c.agentDown(name, "left the cluster", nil) })
}

// agentUp brings an agent's processors into service.
func (c *Controller) agentUp(m member.Meta, l *link) {
	if old := c.links[m.Name]; old != nil {
		old.close()
	}
	c.links[m.Name] = l
	base, ok := c.blocks[m.Name]
	if !ok {
		if c.nextCol+m.CPUs > c.cfg.MaxColumns {
			c.log.Error("no columns left for agent", zap.String("agent", m.Name), zap.Int("cpus", m.CPUs), zap.Int("max", c.cfg.MaxColumns))
			l.close()
			delete(c.links, m.Name)
			return
		}
		base = c.nextCol
		c.blocks[m.Name] = base
		c.nextCol += m.CPUs
		for i := 0; i < m.CPUs; i++ {
			c.owners[base+i] = columnOwner{agent: m.Name, slot: i}
		}
	}
	if err := c.core.SetOffline(c.columnsOf(m.Name), false, c.now()); err != nil {
		c.log.Error("columns online", zap.Error(err))
	}
	c.membersChanged()
	c.log.Info("agent up", zap.String("agent", m.Name), zap.Int("cpus", m.CPUs), zap.Int("first column", base))
}

func (c *Controller) columnsOf(name string) []int {
	base, ok := c.blocks[name]
	if !ok {
		return nil
	}
	n := c.members[name].CPUs
	cols := make([]int, n)
	for i := range cols {
		cols[i] = base + i
	}
	return cols
}

// agentDown takes an agent's processors out of service and fails the jobs
// that had ranks there.
//
// With via set, only that connection's failure counts: a newer connection
// to the same agent may have replaced it.
func (c *Controller) agentDown(name, why string, via *link) {
	l, ok := c.links[name]
	if !ok || via != nil && via != l {
		if !ok {
			delete(c.members, name)
		}
		return
	}
	l.close()
	delete(c.links, name)
	delete(c.members, name)
	if err := c.core.SetOffline(c.columnsOf(name), true, c.now()); err != nil {
		c.log.Error("columns offline", zap.Error(err))
	}
	c.membersChanged()
	c.log.Warn("agent down", zap.String("agent", name), zap.String("why", why))
	for _, id := range c.order {
		j := c.jobs[id]
		if j.state != Running || !slices.Contains(j.agents, name) {
			continue
		}
		for i := range j.ranks {
			if r := &j.ranks[i]; r.Node == name && !r.Exited {
				r.Exited, r.Code, r.Error = true, -1, "node "+name+" down"
				j.exited++
			}
		}
		c.endJob(j, Failed, fmt.Sprintf("node %s %s", name, why))
	}
}

// pass runs the core and carries out its decisions.
func (c *Controller) pass() {
	ds, err := c.core.Schedule(c.now())
	if err != nil {
		c.log.Error("schedule", zap.Error(err))
		return
	}
	for _, d := range ds {
		j := c.jobs[int64(d.Job)]
		if j == nil {
			c.log.Error("decision for an unknown job", zap.Stringer("decision", d))
			continue
		}
		switch d.Kind {
		case gang.Start:
			c.startJob(j, d)
		case gang.Kill:
			if j.spec.Overrun == "extend" {
				c.log.Info("job ran past its time limit; it runs on (overrun extend)", zap.Int64("job", j.id))
				continue
			}
			c.endJob(j, Timeout, fmt.Sprintf("time limit %v reached", j.spec.TimeLimit.D))
		case gang.Alternate, gang.AlternateEnd:
			on := d.Kind == gang.Alternate
			if on {
				j.rows = append(j.rows, d.Row)
			} else {
				j.rows = slices.DeleteFunc(j.rows, func(r int) bool { return r == d.Row })
			}
			for _, a := range j.agents {
				c.send(a, msgAlternate, alternate{Job: j.id, Row: d.Row, On: on})
			}
		}
	}
}

func (c *Controller) startJob(j *jobRecord, d gang.Decision) {
	j.state, j.start, j.row, j.rows = Running, time.Now(), d.Row, []int{d.Row}
	j.ranks = make([]RankInfo, len(d.Columns))
	per := map[string][]launchRank{}
	for r, col := range d.Columns {
		o := c.owners[col]
		j.ranks[r] = RankInfo{Rank: r, Node: o.agent}
		per[o.agent] = append(per[o.agent], launchRank{Rank: r, Slot: o.slot})
	}
	j.agents = slices.Sorted(mapKeys(per))
	nodes := make([]string, len(j.ranks))
	for i, r := range j.ranks {
		nodes[i] = r.Node
	}
	var env, benchArgs []string
	if s := j.spec; s.Bench != "" {
		env = append(env, "COSCHED_BENCH="+s.Bench)
		benchArgs = []string{"--template", s.Bench, "--iterations", strconv.Itoa(s.BenchIterations),
			"--seed", strconv.FormatUint(s.BenchSeed, 10), "--work", cmp.Or(s.BenchWork, "cpu")}
	}
	for _, a := range j.agents {
		l := launch{Job: j.id, Size: len(d.Columns), Argv: j.spec.Command, Env: env, Row: d.Row, Rows: j.rows, Ranks: per[a], Nodes: nodes, Bench: benchArgs,
			Owner: j.spec.Owner, Dir: j.spec.Dir}
		if !c.send(a, msgLaunch, l) {
			for i := range j.ranks {
				if r := &j.ranks[i]; r.Node == a && !r.Exited {
					r.Exited, r.Code, r.Error = true, -1, "node "+a+" unreachable"
					j.exited++
				}
			}
			c.endJob(j, Failed, "node "+a+" unreachable at launch")
		}
	}
	c.log.Info("job started", zap.Int64("job", j.id), zap.Int("row", d.Row), zap.Strings("agents", j.agents))
}

// endJob decides a running job's final state and stops its ranks; the job
// is finished once every rank has gone.
func (c *Controller) endJob(j *jobRecord, st State, reason string) {
	if j.finishing() || j.state.Done() {
		return
	}
	j.ending, j.reason = st, reason
	for _, a := range j.agents {
		c.send(a, msgKill, kill{Job: j.id, Reason: reason})
	}
	c.maybeFinish(j)
}

// maybeFinish completes a job whose ranks have all ended.
func (c *Controller) maybeFinish(j *jobRecord) {
	if j.exited < len(j.ranks) || j.state.Done() {
		return
	}
	j.state = Completed
	if j.ending != "" {
		j.state = j.ending
	}
	j.end = time.Now()
	if err := c.core.Finished(gang.JobID(j.id), c.now()); err != nil {
		c.log.Error("finished", zap.Int64("job", j.id), zap.Error(err))
	}
	c.log.Info("job ended", zap.Int64("job", j.id), zap.String("state", string(j.state)), zap.String("reason", j.reason))
}

// rankEnded records a rank's exit report.
func (c *Controller) rankEnded(m rankExit) {
	j := c.jobs[m.Job]
	if j == nil || m.Rank < 0 || m.Rank >= len(j.ranks) || j.ranks[m.Rank].Exited {
		c.log.Warn("stale rank exit", zap.Int64("job", m.Job), zap.Int("rank", m.Rank), zap.String("node", m.Node))
		return
	}
	r := &j.ranks[m.Rank]
	r.Exited, r.PID, r.Code, r.Signal, r.Error = true, m.PID, m.Code, m.Signal, m.Err
	r.CPUTime, r.MaxRSS = Duration{time.Duration(m.CPUTime)}, m.MaxRSS
	if s := m.Stats; s != nil {
		r.Bench = &BenchStats{Iterations: s.Iterations, Compute: Duration{time.Duration(s.Compute)},
			CommWait: Duration{time.Duration(s.CommWait)}, Wall: Duration{time.Duration(s.Wall)}}
	}
	j.exited++
	if m.Failure != "" && r.Error == "" {
		r.Error = m.Failure
	}
	if !j.finishing() && (m.Code != 0 || m.Signal != "" || m.Err != "" || m.Failure != "") {
		c.endJob(j, Failed, fmt.Sprintf("rank %d on %s %s", m.Rank, m.Node, exitText(m)))
	}
	c.maybeFinish(j)
}

func exitText(m rankExit) string {
	switch {
	case m.Err != "":
		return "could not start: " + m.Err
	case m.Failure != "":
		return m.Failure
	case m.Signal != "":
		return "was " + m.Signal
	}
	return fmt.Sprintf("exited with status %d", m.Code)
}

// send queues a control message for an agent; false if it has no link.
func (c *Controller) send(agent string, t frame.Type, v any) bool {
	l, ok := c.links[agent]
	if !ok {
		return false
	}
	if err := l.send(t, v); err != nil {
		c.log.Warn("control send", zap.String("agent", agent), zap.Error(err))
		c.agentDown(agent, "unreachable: "+err.Error(), nil)
		return false
	}
	return true
}

// Submit queues a job and returns its id.
func (c *Controller) Submit(ctx context.Context, spec JobSpec) (int64, error) {
	var id int64
	var err error
	derr := c.do(ctx, func() {
		if err = spec.Validate(c.core.Online()); err != nil {
			return
		}
		c.nextID++
		id = c.nextID
		if spec.Bench != "" && spec.BenchSeed == 0 {
			spec.BenchSeed = uint64(id) // distinct, reproducible draws per job
		}
		j := &jobRecord{id: id, spec: spec, state: Pending, submit: time.Now()}
		if err = c.core.Submit(gang.Job{
			ID: gang.JobID(id), Submit: c.now(), Processors: spec.Processors,
			Estimate: spec.TimeLimit.D, Memory: spec.Memory, User: "", Template: spec.Bench,
		}, c.now()); err != nil {
			c.nextID--
			return
		}
		c.jobs[id] = j
		c.order = append(c.order, id)
		c.log.Info("job submitted", zap.Int64("job", id), zap.Int("procs", spec.Processors))
	})
	return id, errors.Join(derr, err)
}

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = errors.New("no such job")

// ErrEnded is returned when cancelling a job that has already ended.
var ErrEnded = errors.New("job already ended")

// Cancel ends a job: a pending one leaves the queue, a running one's ranks
// are killed everywhere.
func (c *Controller) Cancel(ctx context.Context, id int64) error {
	var err error
	derr := c.do(ctx, func() {
		j := c.jobs[id]
		switch {
		case j == nil:
			err = fmt.Errorf("job %d: %w", id, ErrNotFound)
		case j.state.Done() || j.finishing():
			err = fmt.Errorf("job %d: %w (%s)", id, ErrEnded, j.state)
		case j.state == Pending:
			j.state, j.reason, j.end = Cancelled, "cancelled before it started", time.Now()
			if e := c.core.Finished(gang.JobID(id), c.now()); e != nil {
				c.log.Error("cancel", zap.Error(e))
			}
		default:
			c.endJob(j, Cancelled, "cancelled")
		}
	})
	return errors.Join(derr, err)
}

// Jobs lists jobs in submission order: the pending and running ones, or
// all with all.
func (c *Controller) Jobs(ctx context.Context, all bool) ([]Job, error) {
	var out []Job
	err := c.do(ctx, func() {
		now := time.Now()
		for _, id := range c.order {
			j := c.jobs[id]
			if all || !j.state.Done() {
				out = append(out, c.viewOf(j, now))
			}
		}
	})
	return out, err
}

// Job returns one job.
func (c *Controller) Job(ctx context.Context, id int64) (Job, error) {
	var v Job
	var err error
	derr := c.do(ctx, func() {
		j := c.jobs[id]
		if j == nil {
			err = fmt.Errorf("job %d: %w", id, ErrNotFound)
			return
		}
		v = c.viewOf(j, time.Now())
	})
	return v, errors.Join(derr, err)
}

func (c *Controller) viewOf(j *jobRecord, now time.Time) Job {
	v := j.view(now)
	if j.state == Pending {
		v.Reason = c.core.Explain(gang.JobID(j.id)).String()
	}
	return v
}

// Nodes lists the cluster's agents (without their stats).
func (c *Controller) Nodes(ctx context.Context) ([]NodeInfo, error) {
	var out []NodeInfo
	err := c.do(ctx, func() {
		names := slices.Collect(mapKeys(c.blocks))
		for name := range c.members {
			if _, ok := c.blocks[name]; !ok {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			m, up := c.members[name]
			_, linked := c.links[name]
			n := NodeInfo{Name: name, State: "down", Columns: c.columnsOf(name)}
			if up {
				n.Controller, n.APIAddr, n.CPUs = m.Controller, m.APIAddr, m.CPUs
				if linked {
					n.State = "up"
				}
			}
			for _, id := range c.order {
				if j := c.jobs[id]; j.state == Running && slices.Contains(j.agents, name) {
					n.Jobs = append(n.Jobs, id)
				}
			}
			out = append(out, n)
		}
	})
	return out, err
}

// ClusterStats is what only the controller knows: its slice clock.
type ClusterStats struct {
	Mode   Mode        `json:"mode"`
	Slice  Duration    `json:"slice"`
	MPL    int         `json:"mpl"`
	Policy gang.Policy `json:"policy"`
	// The options of a priority-backfill policy (empty with any other):
	// how many queued jobs hold a reservation ("inf": every one), whether
	// reservations are dynamic or fixed, and the priority weights in use
	// (the policy's preset unless replaced; none with sjf-bf).
	Reservations    string               `json:"reservations,omitempty"`
	ReservationMode gang.ReservationMode `json:"reservations_mode,omitempty"`
	Weights         *gang.Weights        `json:"weights,omitempty"`
	Online          int                  `json:"processors_online"`
	// Ticks is the slice clock: strobes sent, deadlines skipped because the
	// controller overran a whole slice, strobes sent late (overruns), and
	// how late strobes went out after their deadline.
	Ticks strobe.TickerStats `json:"ticks"`
}

// Stats returns the controller's counters.
func (c *Controller) Stats(ctx context.Context) (ClusterStats, error) {
	var s ClusterStats
	err := c.do(ctx, func() {
		s = ClusterStats{Mode: c.cfg.Mode, Slice: Duration{c.cfg.Slice}, MPL: c.cfg.MPL, Policy: c.cfg.Policy, Online: c.core.Online()}
		s.Reservations, s.ReservationMode, s.Weights = backfillStats(c.cfg.Policy, c.cfg.Backfill)
		if c.ticker != nil {
			s.Ticks = c.ticker.Stats()
		}
	})
	return s, err
}

// backfillStats reports the options policy p runs with: empty unless it is
// a priority-backfill policy, the defaults filled in.
func backfillStats(p gang.Policy, b gang.Backfill) (resv string, mode gang.ReservationMode, w *gang.Weights) {
	if !gang.IsPriorityBackfill(p) {
		return "", "", nil
	}
	switch {
	case b.Reservations == gang.UnlimitedReservations:
		resv = "inf"
	case b.Reservations < 1:
		resv = "1"
	default:
		resv = strconv.Itoa(b.Reservations)
	}
	mode = b.Mode
	if mode == "" {
		mode = gang.Dynamic
	}
	if b.Weights != nil {
		wc := *b.Weights
		w = &wc
	} else if pw, ok := gang.PresetWeights(p); ok {
		w = &pw
	}
	return resv, mode, w
}

// spinAhead is how long before a slice boundary the slice clock stops
// sleeping and spins: a sleeping thread wakes ~35-60 µs late on the
// development VM, which was a third of the strobe overhead at δ = 10 ms.
// The spin costs about (80 µs − wake-up lateness) of CPU per slice, a few
// tenths of a percent of one core; at short slices it is capped at δ/20.
func spinAhead(slice time.Duration) time.Duration {
	return min(80*time.Microsecond, slice/20)
}
