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

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/node/ctl"
	"github.com/cosched/cosched/pmi"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/strobe"
)

// ControllerConfig configures the controller role.
type ControllerConfig struct {
	Name   string
	Mode   sharing.Mode
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
	// KeepProcessor: the slice clock sleeps keeping its Go processor
	// (strobe.TickerConfig.KeepProcessor; Config.KeepProcessors).
	KeepProcessor bool
	// Journal keeps the job table across restarts (default: in memory).
	Journal Journal
	// History is how many finished jobs the table keeps (default 10,000).
	History int
	// CompactAfter is how many records a Compactor journal takes before
	// the controller replaces them with a snapshot (default 100,000): the
	// journal then holds about the live table and the bounded history.
	CompactAfter int
	// ReconnectGrace is how long an agent whose control connection broke
	// may take to come back with its ranks before they count as lost
	// (default 5m).
	ReconnectGrace time.Duration
	// MPI is the default of JobSpec.MPI ("" = none).
	MPI string
	Log *zap.Logger
	// auth authenticates the control connections (the agent's, with the
	// cluster key); nil: they are not.
	auth *controlAuth
}

// Controller is the I/O shell around the controller's state machine
// (node/ctl): control connections to the agents, the slice clock, the
// journal, and the API's calls. One goroutine, its loop (Run), feeds the
// machine every input and carries out its effects in the machine's order:
// records to the journal first, then orders to agents, then answers to the
// API. The slice clock's real-time thread asks the machine for each row
// under mu, which the loop holds only while it feeds the machine (never
// during I/O), so strobes go out without waiting for the Go scheduler or
// the journal. Every other goroutine talks to the loop through do and post.
type Controller struct {
	cfg     ControllerConfig
	log     *zap.Logger
	epoch   uint64
	sender  *strobe.Sender
	journal Journal

	events chan event
	wg     sync.WaitGroup // link goroutines and the slice clock

	appended int // records appended since the journal was last compacted (the loop's)

	mu      sync.Mutex   // guards m, targets, ticker
	m       *ctl.Machine // set by Run once the journal is loaded
	targets []string     // strobe addresses; replaced, never modified in place
	ticker  *strobe.Ticker

	// The loop's own state.
	members map[string]member.Meta // agents in the cluster
	links   map[string]*link       // open control connections
	dialing map[string]bool        // agents a dial is in progress to
	// pmiGathers completes MPI jobs' PMI barriers (pmi.go); not
	// journaled: a restarted controller's MPI jobs in a barrier fail.
	pmiGathers map[int64]*pmi.Gather
	// controlAddrs is each member's latest control address (name →
	// string), for dials in progress: an agent restarted at a new address
	// ends the retries at its old one.
	controlAddrs sync.Map

	// stopped is closed when Run returns. It exists from construction, so
	// goroutines that talk to the controller before its loop starts (a
	// membership event) can always tell it has gone.
	stopped  chan struct{}
	stopOnce sync.Once
}

// event is an input for the machine. f runs in the loop with mu held,
// between two Ticks; done, if set, is closed once its effects have been
// carried out (its records are durable).
type event struct {
	f    func(m *ctl.Machine)
	done chan struct{}
}

// NewController builds a controller; sender sends its strobes (gang and
// bcs modes; nil otherwise). Run loads its journal.
func NewController(cfg ControllerConfig, sender *strobe.Sender, epoch uint64) (*Controller, error) {
	if cfg.MaxColumns <= 0 {
		cfg.MaxColumns = 1024
	}
	if cfg.Journal == nil {
		cfg.Journal = &MemJournal{}
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.CompactAfter <= 0 {
		cfg.CompactAfter = 100_000
	}
	// Check the configuration now, not when Run starts.
	if _, err := ctl.New(machineConfig(cfg), time.Now()); err != nil {
		return nil, err
	}
	return &Controller{
		cfg:     cfg,
		log:     cfg.Log.Named("controller"),
		epoch:   epoch,
		sender:  sender,
		journal: cfg.Journal,
		events:  make(chan event, 256),
		stopped: make(chan struct{}),
		members: map[string]member.Meta{},
		links:   map[string]*link{},
		dialing: map[string]bool{},
	}, nil
}

func machineConfig(cfg ControllerConfig) ctl.Config {
	return ctl.Config{MaxColumns: cfg.MaxColumns, MPL: cfg.MPL, Policy: cfg.Policy, Backfill: cfg.Backfill,
		Alternates: cfg.Mode == sharing.Gang, ReconnectGrace: cfg.ReconnectGrace, History: cfg.History}
}

// Run loads the journal, rebuilds the job table from it, and runs the
// controller's loop; it returns when ctx is done, after closing every
// control connection, or when the journal fails.
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.stop() // first: dials backing off and callers waiting see it
		for _, l := range c.links {
			l.close()
		}
		c.wg.Wait()
	}()
	if err := c.load(ctx); err != nil {
		return err
	}
	if c.cfg.Mode.TimeShared() {
		t, err := strobe.NewTicker(strobe.TickerConfig{Period: c.cfg.Slice, Priority: c.cfg.Priority, SpinAhead: spinAhead(c.cfg.Slice), KeepProcessor: c.cfg.KeepProcessor})
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
		var err error
		select {
		case <-ctx.Done():
			return nil
		case ev := <-c.events:
			// The events queued meanwhile join it: their records go to the
			// journal in one append (group commit: under a stream of
			// submissions the journal's round trip is paid once per batch,
			// not once per job). done is closed only for effects carried
			// out: a caller whose records could not be persisted hears
			// ErrStopped instead.
			evs := c.drain(ev)
			fs := make([]func(*ctl.Machine), len(evs))
			for i, e := range evs {
				fs[i] = e.f
			}
			if err = c.handle(ctx, fs...); err == nil {
				for _, e := range evs {
					if e.done != nil {
						close(e.done)
					}
				}
			}
		case <-wake.C:
			err = c.handle(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		c.rearm(wake)
	}
}

// load builds the machine from the journal: a fresh one if it is empty.
func (c *Controller) load(ctx context.Context) error {
	records, err := c.journal.Load(ctx)
	if err != nil {
		return fmt.Errorf("node: controller journal: %w", err)
	}
	var m *ctl.Machine
	if len(records) == 0 {
		m, err = ctl.New(machineConfig(c.cfg), time.Now())
	} else {
		m, err = ctl.Restore(machineConfig(c.cfg), records, time.Now())
	}
	if err != nil {
		return fmt.Errorf("node: controller journal: %w", err)
	}
	if len(records) > 0 {
		c.log.Info("job table restored from the journal", zap.Int("records", len(records)), zap.Int("jobs", len(m.Jobs(true))))
	}
	c.mu.Lock()
	c.m = m
	c.mu.Unlock()
	return c.handle(ctx)
}

// stop marks the controller as gone. Idempotent.
func (c *Controller) stop() { c.stopOnce.Do(func() { close(c.stopped) }) }

// do runs f on the machine in the controller's loop and waits until its
// effects are carried out: what f reports is durable when do returns.
func (c *Controller) do(ctx context.Context, f func(m *ctl.Machine)) error {
	done := make(chan struct{})
	select {
	case c.events <- event{f: f, done: done}:
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

// post queues f for the controller's loop without waiting (for the
// control connections' goroutines). It gives up if the controller stopped.
func (c *Controller) post(f func(m *ctl.Machine)) {
	select {
	case c.events <- event{f: f}:
	case <-c.stopped:
	}
}

// maxBatch bounds the events handled, and journaled, together.
const maxBatch = 256

// drain returns first and the events queued behind it, at most maxBatch.
func (c *Controller) drain(first event) []event {
	evs := []event{first}
	for len(evs) < maxBatch {
		select {
		case ev := <-c.events:
			evs = append(evs, ev)
		default:
			return evs
		}
	}
	return evs
}

// handle feeds inputs to the machine (none: a timer) at the current time,
// in order, and carries out their effects together.
func (c *Controller) handle(ctx context.Context, fs ...func(m *ctl.Machine)) error {
	now := time.Now()
	c.mu.Lock()
	c.m.Tick(now)
	for _, f := range fs {
		if f != nil {
			f(c.m)
			c.m.Tick(now)
		}
	}
	b := c.collect()
	c.mu.Unlock()
	return c.carryOut(ctx, b)
}

// batch is one Ready, ready for I/O.
type batch struct {
	records []ctl.Record
	orders  []order
}

type order struct {
	to  string
	typ frame.Type
	msg any
}

// collect takes the machine's Ready (with mu held): it installs the new
// strobe targets at once, so the next strobe's member epoch and targets
// agree, renders the orders, and logs the state changes.
func (c *Controller) collect() batch {
	rd := c.m.Ready()
	c.m.Advance()
	if rd.MembersChanged {
		targets := make([]string, 0, len(rd.Targets))
		for _, name := range rd.Targets {
			targets = append(targets, c.members[name].StrobeAddr)
		}
		c.targets = targets
	}
	b := batch{records: rd.Records}
	for _, msg := range rd.Messages {
		switch {
		case msg.Launch != nil:
			b.orders = append(b.orders, order{msg.To, msgLaunch, c.launchOf(msg.Launch)})
		case msg.Kill != nil:
			b.orders = append(b.orders, order{msg.To, msgKill, kill{Job: msg.Kill.Job, Reason: msg.Kill.Reason}})
		case msg.Alternate != nil:
			a := msg.Alternate
			b.orders = append(b.orders, order{msg.To, msgAlternate, alternate{Job: a.Job, Row: a.Row, On: a.On}})
		}
	}
	for _, ch := range rd.Changes {
		switch ch.State {
		case api.Pending:
			c.log.Info("job submitted", zap.Int64("job", ch.Job))
		case api.Running:
			c.log.Info("job started", zap.Int64("job", ch.Job))
		default:
			delete(c.pmiGathers, ch.Job)
			c.log.Info("job ended", zap.Int64("job", ch.Job), zap.String("state", string(ch.State)), zap.String("reason", ch.Reason))
		}
	}
	return b
}

// launchOf renders a launch order with what the job runs.
func (c *Controller) launchOf(l *ctl.Launch) launch {
	j, _ := c.m.Job(l.Job)
	env := slices.Clone(j.Spec.Env) // then the controller's variables, which win
	var bj *bench.Job
	if s := j.Spec; s.Bench != "" {
		env = append(env, "COSCHED_BENCH="+s.Bench)
		t, _ := bench.ParseTemplate(s.Bench) // valid: checked at submission
		bj = &bench.Job{Template: t, Iterations: s.BenchIterations, Seed: s.BenchSeed, Work: cmp.Or(s.BenchWork, "cpu")}
	}
	// The job's sharing mode, the same in every agent's launch: cosched's
	// MPI library picks its collective algorithms by it, and every rank
	// must pick alike (an agent's relay mode could differ for a moment
	// after a controller change).
	env = append(env, "COSCHED_MODE="+string(c.cfg.Mode))
	ranks := make([]launchRank, len(l.Ranks))
	for i, r := range l.Ranks {
		ranks[i] = launchRank{Rank: r.Rank, Slot: r.Slot}
	}
	return launch{Job: l.Job, Size: l.Size, Argv: j.Spec.Command, Env: env, Row: l.Row, Rows: l.Rows, Ranks: ranks, Nodes: l.Nodes, Bench: bj,
		MemoryPerRank: j.Spec.Memory, MPI: j.Spec.MPI,
		Owner: j.Spec.Owner, Dir: j.Spec.Dir}
}

// carryOut persists a batch's records, then sends its orders. An agent
// whose connection cannot take an order is down; the machine hears it,
// and the effects of that are carried out too.
func (c *Controller) carryOut(ctx context.Context, b batch) error {
	for {
		if len(b.records) > 0 {
			if err := c.journal.Append(ctx, b.records); err != nil {
				c.log.Error("journal: cannot persist; the controller stops", zap.Error(err))
				return fmt.Errorf("node: controller journal: %w", err)
			}
			if err := c.maybeCompact(ctx, len(b.records)); err != nil {
				return err
			}
		}
		var down []string
		for _, o := range b.orders {
			l := c.links[o.to]
			if l == nil || slices.Contains(down, o.to) {
				continue
			}
			if err := l.send(o.typ, o.msg); err != nil {
				c.log.Warn("control send", zap.String("peer", o.to), zap.Error(err))
				down = append(down, o.to)
			}
		}
		if len(down) == 0 {
			return nil
		}
		c.mu.Lock()
		for _, name := range down {
			c.linkLost(c.m, name, c.links[name], "unreachable")
		}
		b = c.collect()
		c.mu.Unlock()
	}
}

// maybeCompact replaces a Compactor journal's records with a snapshot
// once CompactAfter records were appended since the last time. Called
// right after an append, before any other input: the snapshot is the
// state those records lead to.
func (c *Controller) maybeCompact(ctx context.Context, n int) error {
	cj, ok := c.journal.(Compactor)
	if c.appended += n; !ok || c.appended < c.cfg.CompactAfter {
		return nil
	}
	c.mu.Lock()
	snap := c.m.Snapshot()
	c.mu.Unlock()
	if err := cj.Compact(ctx, snap); err != nil {
		c.log.Error("journal: cannot compact; the controller stops", zap.Error(err))
		return fmt.Errorf("node: controller journal: compacting: %w", err)
	}
	c.log.Info("journal compacted", zap.Int("records appended", c.appended), zap.Int("records now", len(snap)))
	c.appended = 0
	return nil
}

func (c *Controller) rearm(wake *time.Timer) {
	d := time.Hour
	c.mu.Lock()
	if t, ok := c.m.NextWakeup(); ok {
		d = max(time.Until(t), 0)
	}
	c.mu.Unlock()
	wake.Reset(d)
}

// strobe starts the next slice, on the slice clock's thread: the machine
// picks the row, every agent hears it.
func (c *Controller) strobe(tk strobe.Tick) {
	c.mu.Lock()
	s := c.m.Slice(time.Now())
	targets := c.targets
	c.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	sent, err := c.sender.Strobe(targets, s.Seq, s.Row, s.Epoch, tk.Deadline)
	if err != nil {
		c.log.Warn("strobe", zap.Uint64("seq", s.Seq), zap.Error(err))
	}
	c.ticker.Sent(tk, sent)
}

// MemberJoined tells the controller an agent joined (or updated its
// metadata): it opens a control connection to it.
func (c *Controller) MemberJoined(m member.Meta) {
	c.post(func(*ctl.Machine) {
		c.members[m.Name] = m
		c.controlAddrs.Store(m.Name, m.ControlAddr)
		c.connect(m.Name, 0)
	})
}

// MemberLeft tells the controller an agent left or failed: its ranks are
// gone.
func (c *Controller) MemberLeft(name string) {
	c.post(func(m *ctl.Machine) {
		delete(c.members, name)
		if l := c.links[name]; l != nil {
			l.close()
			delete(c.links, name)
		}
		m.AgentLeft(name)
	})
}

// connect opens a control connection to a member unless one is open or
// being opened, after delay (a connection that just broke).
func (c *Controller) connect(name string, delay time.Duration) {
	meta, member := c.members[name]
	if _, ok := c.links[name]; ok || c.dialing[name] || !member {
		return
	}
	c.dialing[name] = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-c.stopped:
			return
		case <-time.After(delay):
		}
		c.dial(meta)
	}()
}

// linkUp registers a new control connection and reports the agent up,
// with what it runs.
func (c *Controller) linkUp(m *ctl.Machine, meta member.Meta, l *link, w welcome) {
	delete(c.dialing, meta.Name)
	if _, member := c.members[meta.Name]; !member {
		l.close() // it left while we dialed
		return
	}
	if old := c.links[meta.Name]; old != nil {
		old.close()
	}
	c.links[meta.Name] = l
	report := ctl.AgentReport{Name: meta.Name, CPUs: meta.CPUs, Memory: meta.Memory,
		Incarnation: w.Incarnation, Launched: w.Launched, LaunchedFloor: w.LaunchedFloor, KeepsRanks: w.Keeps}
	for _, r := range w.Ranks {
		report.Ranks = append(report.Ranks, ctl.LiveRank{Job: r.Job, Rank: r.Rank, PID: r.PID, Stopped: r.Stopped})
	}
	if len(w.Ranks) == 0 {
		for _, id := range w.Jobs { // an agent that reports jobs only
			report.Ranks = append(report.Ranks, ctl.LiveRank{Job: id, Rank: -1})
		}
	}
	for _, x := range w.Exits {
		report.Exits = append(report.Exits, exitOf(x))
	}
	if err := m.AgentUp(report); err != nil {
		c.log.Error("agent refused", zap.String("peer", meta.Name), zap.Error(err))
		l.close()
		delete(c.links, meta.Name)
		return
	}
	c.log.Info("agent up", zap.String("peer", meta.Name), zap.Int("cpus", meta.CPUs),
		zap.Int("live ranks", len(w.Ranks)), zap.Int("exits meanwhile", len(w.Exits)))
}

// linkLost handles the end of a control connection (l, if it is still the
// agent's): the agent is down until it is reached again.
func (c *Controller) linkLost(m *ctl.Machine, name string, l *link, why string) {
	if l == nil || c.links[name] != l {
		return
	}
	l.close()
	delete(c.links, name)
	m.AgentDown(name)
	c.log.Warn("agent down: its ranks keep running while it is reached again", zap.String("peer", name), zap.String("why", why))
	c.connect(name, 200*time.Millisecond)
}

func exitOf(x rankExit) ctl.RankExit {
	e := ctl.RankExit{Job: x.Job, Rank: x.Rank, Node: x.Node, PID: x.PID, Code: x.Code, Signal: x.Signal,
		CPUTime: time.Duration(x.CPUTime), MaxRSS: x.MaxRSS, Err: x.Err, Failure: x.Failure, Reason: x.Reason}
	if u := x.Usage; u != nil {
		e.Usage = &api.NodeUsage{CPUTime: api.Duration{D: time.Duration(u.CPUTime)}, PeakMemory: u.PeakMemory, MemoryLimit: u.MemoryLimit,
			Processes: u.Processes, OOMKills: u.OOMKills}
	}
	if s := x.Stats; s != nil {
		e.Stats = &api.BenchStats{Iterations: s.Iterations, Compute: api.Duration{D: time.Duration(s.Compute)},
			CommWait: api.Duration{D: time.Duration(s.CommWait)}, Wall: api.Duration{D: time.Duration(s.Wall)}}
	}
	return e
}

// Submit queues a job and returns its id once the job is durable.
func (c *Controller) Submit(ctx context.Context, spec api.JobSpec) (int64, error) {
	var id int64
	var err error
	if spec.MPI == "" && spec.Bench == "" {
		spec.MPI = c.cfg.MPI
	}
	derr := c.do(ctx, func(m *ctl.Machine) { id, err = m.Submit(spec) })
	return id, errors.Join(derr, err)
}

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = ctl.ErrNotFound

// ErrEnded is returned when cancelling a job that has already ended.
var ErrEnded = ctl.ErrEnded

// Cancel ends a job: a pending one leaves the queue, a running one's ranks
// are killed everywhere.
func (c *Controller) Cancel(ctx context.Context, id int64) error {
	var err error
	derr := c.do(ctx, func(m *ctl.Machine) { err = m.Cancel(id) })
	return errors.Join(derr, err)
}

// Jobs lists jobs in submission order: the pending and running ones, or
// all with all.
func (c *Controller) Jobs(ctx context.Context, all bool) ([]api.Job, error) {
	var out []api.Job
	err := c.do(ctx, func(m *ctl.Machine) {
		now := time.Now()
		for _, j := range m.Jobs(all) {
			out = append(out, viewOf(m, j, now))
		}
	})
	return out, err
}

// Job returns one job.
func (c *Controller) Job(ctx context.Context, id int64) (api.Job, error) {
	var v api.Job
	var err error
	derr := c.do(ctx, func(m *ctl.Machine) {
		j, ok := m.Job(id)
		if !ok {
			err = fmt.Errorf("job %d: %w", id, ErrNotFound)
			return
		}
		v = viewOf(m, j, time.Now())
	})
	return v, errors.Join(derr, err)
}

// Nodes lists the cluster's agents (without their stats).
func (c *Controller) Nodes(ctx context.Context) ([]api.NodeInfo, error) {
	var out []api.NodeInfo
	err := c.do(ctx, func(m *ctl.Machine) {
		agents := map[string]ctl.Agent{}
		for _, a := range m.Agents() {
			agents[a.Name] = a
		}
		names := slices.Collect(mapKeys(agents))
		for name := range c.members {
			if _, ok := agents[name]; !ok {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		jobs := m.Jobs(false)
		for _, name := range names {
			meta, member := c.members[name]
			n := api.NodeInfo{Name: name, State: "down", Columns: agents[name].Columns}
			if member {
				n.Controller, n.APIAddr, n.CPUs, n.Memory = meta.Controller, meta.APIAddr, meta.CPUs, meta.Memory
				if agents[name].Up {
					n.State = "up"
				}
			}
			for _, j := range jobs {
				if j.State == api.Running && slices.Contains(j.Agents, name) {
					n.Jobs = append(n.Jobs, j.ID)
				}
			}
			out = append(out, n)
		}
	})
	return out, err
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

// Stats returns the controller's counters.
func (c *Controller) Stats(ctx context.Context) (api.ClusterStats, error) {
	var s api.ClusterStats
	err := c.do(ctx, func(m *ctl.Machine) {
		s = api.ClusterStats{Mode: c.cfg.Mode, Slice: api.Duration{D: c.cfg.Slice}, MPL: c.cfg.MPL, Policy: c.cfg.Policy, Online: m.Online()}
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
