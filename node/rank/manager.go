package rank

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Manager launches, signals and reaps the ranks of one agent. Its methods
// are safe for concurrent use. See the package doc for the lifecycle.
type Manager struct {
	log          *zap.Logger
	nice         *int     // Config.Nice
	shim         []string // Shim with [0] resolved; nil when not configured
	startTimeout time.Duration
	keepDir      string // Config.KeepDir
	keepOwner    string

	spawnc      chan spawnReq // to the spawner; closed by Close after the last reap
	spawnerDone chan struct{}

	inflight sync.WaitGroup // Start calls past the closed check
	reapers  sync.WaitGroup // one per forked process
	closeOne sync.Once
	closeErr error

	exits chan Exit // owned by the forwarder, which closes it

	mu     sync.Mutex
	cond   *sync.Cond       // on mu: the forwarder waits for queue or done
	closed bool             // Close has begun: Start refuses
	done   bool             // every rank reaped and the spawner gone
	jobs   map[int64]jobSet // ranks not yet seen exiting (placeholders included)
	queue  []Exit           // exits not yet handed to the forwarder
}

// jobSet holds one job's ranks on this node by rank number.
type jobSet map[int]*proc

// proc is one rank's process. Fields are guarded by Manager.mu.
type proc struct {
	job  int64
	rank int
	pid  int // 0 while the spawner has not yet forked it (a placeholder)
	// ready: the program may receive SIGSTOP/SIGCONT directly. A Stopped
	// rank becomes ready once its shim has stopped itself; before that a
	// SIGCONT is remembered in contPending (and a SIGSTOP clears it) so a
	// Cont racing with Start is neither lost nor able to wake the shim
	// before its own SIGSTOP.
	ready       bool
	contPending bool
	released    bool          // a SIGCONT has reached the program or its stopped shim
	pending     []unix.Signal // signals sent to a placeholder, delivered once forked
	exiting     bool          // the leader has exited: pgid no longer ours to signal
	startErr    error         // why Start gave up on it (reported in its Exit)
	kept        bool          // started through a keeper (Config.KeepDir)
	killed      bool          // the manager sent it SIGKILL (Kill, Close)
}

// readyMsg tells Start whether a Stopped rank's shim reached its stop.
type readyMsg struct {
	stopped bool
	err     error // when not stopped: how the shim ended
}

// NewManager starts the manager's spawner and forwarder goroutines.
func NewManager(cfg Config) (*Manager, error) {
	m := &Manager{
		log:          cfg.Log,
		nice:         cfg.Nice,
		startTimeout: cfg.StartTimeout,
		keepDir:      cfg.KeepDir,
		keepOwner:    cfg.KeepOwner,
		spawnc:       make(chan spawnReq),
		spawnerDone:  make(chan struct{}),
		exits:        make(chan Exit, 64),
		jobs:         make(map[int64]jobSet),
	}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	if m.startTimeout <= 0 {
		m.startTimeout = defaultStartTimeout
	}
	if len(cfg.Shim) > 0 {
		path, err := resolve(cfg.Shim[0], "") // absolute: Spec.Dir must not change its meaning
		if err != nil {
			return nil, fmt.Errorf("rank: shim: %w", err)
		}
		m.shim = append([]string{path}, cfg.Shim[1:]...)
	}
	if m.keepDir != "" {
		if m.shim == nil {
			return nil, errors.New("rank: KeepDir needs Config.Shim (the keeper)")
		}
		if err := os.MkdirAll(m.keepDir, 0o755); err != nil {
			return nil, fmt.Errorf("rank: keep dir: %w", err)
		}
	}
	m.cond = sync.NewCond(&m.mu)
	go m.spawner(m.spawnc, m.spawnerDone)
	go m.forward()
	return m, nil
}

// Start spawns a rank and returns its pid (which is also its process group).
// For a Stopped spec it returns only once the shim has stopped itself, so a
// later Cont cannot be lost and the program cannot run before it. Every Start
// not refused with ErrClosed yields exactly one Exit on Exits, failures
// included: a Start that returns an error still reports it there (with Err
// set), so a caller can count one Exit per Start.
func (m *Manager) Start(s Spec) (int, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return 0, ErrClosed
	}
	p := &proc{job: s.Job, rank: s.Rank, kept: m.keepDir != ""}
	if _, dup := m.jobs[s.Job][s.Rank]; dup {
		err := fmt.Errorf("rank: job %d rank %d: already running on this node", s.Job, s.Rank)
		m.pushLocked(failed(&s, time.Now(), err))
		m.mu.Unlock()
		return 0, err
	}
	m.addLocked(p)
	m.inflight.Add(1)
	m.mu.Unlock()
	defer m.inflight.Done()

	started := time.Now()
	pid, err := m.spawn(&s)
	if err != nil {
		err = fmt.Errorf("rank: job %d rank %d: %w", s.Job, s.Rank, err)
		m.mu.Lock()
		m.removeLocked(p)
		m.pushLocked(failed(&s, started, err))
		m.mu.Unlock()
		m.log.Warn("rank spawn failed", zap.Int64("job", s.Job), zap.Int("rank", s.Rank), zap.Error(err))
		return 0, err
	}

	if m.keepDir != "" {
		if err := m.writeKeepRecord(&s, pid, started); err != nil {
			// The rank runs, but a later life of the agent would not find it.
			m.log.Error("rank: keeper record not written", zap.Int64("job", s.Job), zap.Int("rank", s.Rank), zap.Error(err))
		}
	}
	var ready chan readyMsg
	if s.Stopped {
		ready = make(chan readyMsg, 1)
	}
	m.mu.Lock()
	p.pid = pid
	p.ready = !s.Stopped
	p.released = !s.Stopped
	m.reapers.Add(1)
	go m.reap(p, &s, started, ready)
	for _, sig := range p.pending {
		if err := m.deliverLocked(p, sig); err != nil {
			m.log.Error("rank: delivering a signal sent while starting", zap.Error(err))
		}
	}
	p.pending = nil
	m.mu.Unlock()
	m.log.Info("rank started", zap.Int64("job", s.Job), zap.Int("rank", s.Rank),
		zap.Int("pid", pid), zap.Bool("stopped", s.Stopped), zap.Int("cpu", s.CPU))

	if s.Stopped {
		if err := m.awaitStop(p, ready); err != nil {
			return 0, err
		}
	}
	// If Close began while we forked, its SIGKILL was queued and delivered
	// above: the rank is dying and its Exit will come, as after any Kill.
	return pid, nil
}

// spawn resolves the spec into a fork request and has the spawner run it.
func (m *Manager) spawn(s *Spec) (int, error) {
	if err := s.validate(); err != nil {
		return 0, fmt.Errorf("invalid spec: %w", err)
	}
	// The directory first: a relative program is found in it, and
	// ForkExec would report a bad directory as if the program were missing.
	dir := s.Dir
	if dir == "" {
		dir = s.LogDir
	} else if err := usableDir(dir, s.Credential); err != nil {
		return 0, fmt.Errorf("working directory %s: %w", dir, err)
	}
	path, err := resolve(s.Argv[0], s.Dir)
	if err != nil {
		return 0, err
	}
	argv := append([]string{path}, s.Argv[1:]...)
	if m.keepDir != "" {
		mode := "running"
		if s.Stopped {
			mode = "stopped"
		}
		exitFile := keepBase(m.keepDir, s.Job, s.Rank) + ".exit"
		if err := makeExitFile(exitFile, s.Credential); err != nil {
			return 0, fmt.Errorf("keeper exit record: %w", err)
		}
		argv = append(append(slices.Clone(m.shim), keeperArg, exitFile, strconv.Itoa(3+len(s.ExtraFiles)), mode, strconv.Itoa(os.Getpid()), "--"), argv...)
		path = m.shim[0]
	} else if s.Stopped {
		if m.shim == nil {
			return 0, errors.New("a stopped start needs Config.Shim")
		}
		argv = append(append(slices.Clone(m.shim), "--"), argv...)
		path = m.shim[0]
	}
	files, err := logFiles(s)
	if err != nil {
		return 0, err
	}
	defer closeAll(files)
	req := spawnReq{
		path:  path,
		argv:  argv,
		env:   environ(s),
		dir:   dir,
		files: append(files, s.ExtraFiles...),
		cpu:   s.CPU,
		cred:  s.Credential,
		cg:    s.Cgroup,
		keep:  m.keepDir != "",
		reply: make(chan spawnResult, 1),
	}
	m.spawnc <- req // open: Close waits for in-flight Starts before closing it
	r := <-req.reply
	return r.pid, r.err
}

// awaitStop waits for the reaper's word that a Stopped rank's shim has
// stopped itself, then releases any Cont that arrived meanwhile. On timeout
// it kills the shim (its Exit reports why).
func (m *Manager) awaitStop(p *proc, ready <-chan readyMsg) error {
	timer := time.NewTimer(m.startTimeout)
	defer timer.Stop()
	select {
	case r := <-ready:
		if !r.stopped {
			return r.err
		}
		m.mu.Lock()
		p.ready = true
		if p.contPending && !p.exiting {
			if err := m.killLocked(p, unix.SIGCONT); err != nil {
				m.log.Error("rank: delivering a Cont sent while starting", zap.Error(err))
			}
		}
		p.contPending = false
		m.mu.Unlock()
		return nil
	case <-timer.C:
		why := ""
		if t, ok := readSchedTimes(p.pid); ok {
			why = " (" + t.why(m.startTimeout) + ")"
		}
		err := fmt.Errorf("rank: job %d rank %d: shim did not stop itself within %v%s; killed", p.job, p.rank, m.startTimeout, why)
		m.mu.Lock()
		p.startErr = err
		if !p.exiting {
			if kerr := m.killLocked(p, unix.SIGKILL); kerr != nil {
				m.log.Error("rank: killing a shim that did not stop", zap.Error(kerr))
			}
		}
		m.mu.Unlock()
		return err
	}
}

// Ranks returns the pids of the job's live ranks on this node, by rank.
func (m *Manager) Ranks(job int64) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.jobs[job]
	ranks := make([]int, 0, len(set))
	for r, p := range set {
		if p.pid != 0 {
			ranks = append(ranks, r)
		}
	}
	slices.Sort(ranks)
	pids := make([]int, len(ranks))
	for i, r := range ranks {
		pids[i] = set[r].pid
	}
	return pids
}

// Live is a rank that has a process on this node.
type Live struct {
	Job  int64
	Rank int
	PID  int
}

// Live lists the ranks that have a process (forked, not yet reaped), by
// job and rank.
func (m *Manager) Live() []Live {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Live
	for job, set := range m.jobs {
		for r, p := range set {
			if p.pid != 0 && !p.exiting {
				out = append(out, Live{Job: job, Rank: r, PID: p.pid})
			}
		}
	}
	slices.SortFunc(out, func(a, b Live) int { return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Rank, b.Rank)) })
	return out
}

// Exits delivers one Exit per Start, in the order the ranks ended (spawn
// failures when they failed). The manager queues them without bound, so
// reaping never waits for the reader; the channel is closed after Close once
// every Exit has been received. Drain it: the forwarding goroutine exits
// only when the last Exit has been taken.
func (m *Manager) Exits() <-chan Exit { return m.exits }

// Close kills every rank (SIGKILL and SIGCONT to each group), waits for all
// of them to be reaped and for the spawner goroutine to exit. Starts in
// progress are waited for (each ends with its rank killed). Idempotent;
// concurrent calls wait for the first.
func (m *Manager) Close() error {
	m.closeOne.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Manager) close() error {
	m.mu.Lock()
	m.closed = true
	errs := m.killAllLocked()
	m.mu.Unlock()

	m.inflight.Wait() // no Start can register a process after this
	m.mu.Lock()
	errs = append(errs, m.killAllLocked()...) // none expected: belt and braces
	m.mu.Unlock()

	m.reapers.Wait()
	close(m.spawnc)
	<-m.spawnerDone // its thread may exit now: it has no children left

	m.mu.Lock()
	m.done = true
	m.cond.Broadcast()
	m.mu.Unlock()
	m.log.Info("rank manager closed")
	return errors.Join(errs...)
}

// killAllLocked sends SIGKILL then SIGCONT to every rank.
func (m *Manager) killAllLocked() []error {
	var errs []error
	for _, set := range m.jobs {
		for _, p := range set {
			for _, sig := range []unix.Signal{unix.SIGKILL, unix.SIGCONT} {
				if err := m.deliverLocked(p, sig); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errs
}

// forward moves queued Exits to the channel, so that reapers never block on
// the reader. It closes the channel once Close is done and the queue drained.
func (m *Manager) forward() {
	defer close(m.exits)
	for {
		m.mu.Lock()
		for len(m.queue) == 0 && !m.done {
			m.cond.Wait()
		}
		batch := m.queue
		m.queue = nil
		m.mu.Unlock()
		if len(batch) == 0 {
			return // done and drained
		}
		for _, e := range batch {
			m.exits <- e
		}
	}
}

func (m *Manager) pushLocked(e Exit) {
	m.queue = append(m.queue, e)
	m.cond.Broadcast()
}

func (m *Manager) addLocked(p *proc) {
	set := m.jobs[p.job]
	if set == nil {
		set = make(jobSet)
		m.jobs[p.job] = set
	}
	set[p.rank] = p
}

func (m *Manager) removeLocked(p *proc) {
	set := m.jobs[p.job]
	if set[p.rank] != p {
		return
	}
	delete(set, p.rank)
	if len(set) == 0 {
		delete(m.jobs, p.job)
	}
}

// failed is the Exit of a Start that created no process.
func failed(s *Spec, at time.Time, err error) Exit {
	return Exit{Job: s.Job, Rank: s.Rank, Code: 127, Started: at, Ended: time.Now(), Err: err}
}
