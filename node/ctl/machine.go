package ctl

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
)

// Config configures a machine.
type Config struct {
	MaxColumns int // the most processors the cluster can have (default 1024)
	MPL        int // rows of the matrix
	Policy     gang.Policy
	Backfill   gang.Backfill
	// Alternates turns on alternative scheduling (gang mode).
	Alternates bool
	// History is how many finished jobs the table keeps (default 10000);
	// older ones are forgotten, oldest end first.
	History int
	// ReconnectGrace is how long an agent whose connection broke may take
	// to come back before its ranks count as lost (default 5m; an agent
	// kills its ranks after its own grace, --controller-grace).
	ReconnectGrace time.Duration
}

// DefaultReconnectGrace is Config.ReconnectGrace when it is not set.
const DefaultReconnectGrace = 5 * time.Minute

// Errors the API's writes return. Check with errors.Is.
var (
	ErrNotFound = errors.New("no such job")
	ErrEnded    = errors.New("job already ended")
	// ErrNoAgents: no agent has registered its processors yet (the
	// controller has just started or taken over): a submission may be
	// repeated in a moment.
	ErrNoAgents = errors.New("no agent has registered with the controller yet (it has just started or taken over); retry in a moment")
)

// Job is the machine's record of a job; the machine hands out copies.
type Job struct {
	ID      int64
	Spec    api.JobSpec
	State   api.State
	Reason  string // why it failed (pending jobs: see Explain)
	Submit  time.Time
	Start   time.Time
	End     time.Time
	Row     int
	Rows    []int          // the rows it runs in (own and alternates), sorted
	Columns []int          // its matrix columns, by rank
	Ranks   []api.RankInfo // by rank
	Agents  []string       // agents hosting ranks, sorted
	Ending  api.State      // the final state decided while ranks are being stopped ("" if none)
	Exited  int            // ranks ended
}

type job struct {
	Job
	// incarnations are, for each agent of the job, the incarnation it
	// had when the job started there: if that same life of the agent
	// later says it never got the launch, the launch was lost (the
	// controller that sent it died first) and is sent again.
	incarnations map[string]uint64
}

func (j *job) finishing() bool { return j.Ending != "" }

func (j *job) place(at time.Time, row int, cols []int, nodes []string) {
	j.State, j.Start, j.Row, j.Rows = api.Running, at, row, []int{row}
	j.Columns = slices.Clone(cols)
	j.Ranks = make([]api.RankInfo, len(cols))
	for r := range cols {
		j.Ranks[r] = api.RankInfo{Rank: r, Node: nodes[r]}
	}
	j.Agents = slices.Compact(slices.Sorted(slices.Values(slices.Clone(nodes))))
}

// setRank records a rank's pid or exit.
func (j *job) setRank(r api.RankInfo) {
	old := &j.Ranks[r.Rank]
	if r.Exited && !old.Exited {
		j.Exited++
	}
	*old = r
}

type agent struct {
	base, cpus  int
	incarnation uint64 // the agent process's life, as it last reported (0: unknown)
	up          bool
	downSince   time.Time // while !up
	keeps       bool      // its ranks outlive it (AgentReport.KeepsRanks)
}

type owner struct {
	agent string
	slot  int
}

// Machine is the controller's state machine. It is not safe for
// concurrent use: its owner serialises every call.
type Machine struct {
	cfg     Config
	core    *gang.Scheduler
	origin  time.Time // time zero of the core's clock
	now     time.Time // the last Tick
	coreNow time.Duration
	nextID  int64

	jobs    map[int64]*job
	byKey   map[string]int64 // jobs by their submit key (JobSpec.SubmitKey), while in the table
	order   []int64          // submission order
	history []int64          // finished jobs, in the order they ended

	agents     map[string]*agent
	agentOrder []string // in the order they were given columns
	owners     []owner  // column → agent processor
	nextCol    int

	seq         uint64 // strobes
	memberEpoch uint64
	resync      bool // restored: reconcile rows with the core after the next pass
	ready       Ready
}

// New returns an empty machine whose clock starts at now.
func New(cfg Config, now time.Time) (*Machine, error) {
	m, err := newMachine(cfg, now)
	if err != nil {
		return nil, err
	}
	if m.core, err = m.newCore(); err != nil {
		return nil, err
	}
	m.persist(Record{Kind: RecOrigin, At: m.origin})
	return m, nil
}

func newMachine(cfg Config, now time.Time) (*Machine, error) {
	if cfg.MaxColumns <= 0 {
		cfg.MaxColumns = 1024
	}
	if cfg.History <= 0 {
		cfg.History = 10000
	}
	if cfg.ReconnectGrace <= 0 {
		cfg.ReconnectGrace = DefaultReconnectGrace
	}
	now = now.Round(0) // no monotonic reading: records carry wall time
	return &Machine{cfg: cfg, origin: now, now: now, jobs: map[int64]*job{}, byKey: map[string]int64{}, agents: map[string]*agent{},
		owners: make([]owner, cfg.MaxColumns)}, nil
}

func (m *Machine) newCore() (*gang.Scheduler, error) {
	core, err := gang.New(gang.Config{
		Machine:               gang.Machine{Processors: m.cfg.MaxColumns},
		MPL:                   m.cfg.MPL,
		Policy:                m.cfg.Policy,
		Backfill:              m.cfg.Backfill,
		AlternativeScheduling: m.cfg.Alternates,
		EnforceLimits:         true,
	})
	if err != nil {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	all := make([]int, m.cfg.MaxColumns)
	for i := range all {
		all[i] = i
	}
	if err := core.SetOffline(all, true, 0); err != nil { // columns come online as agents join
		return nil, fmt.Errorf("ctl: %w", err)
	}
	return core, nil
}

// coreTime is t on the core's clock, which never goes back (the wall
// clock may).
func (m *Machine) coreTime(t time.Time) time.Duration {
	m.coreNow = max(m.coreNow, t.Sub(m.origin))
	return m.coreNow
}

func (m *Machine) ct() time.Duration { return m.coreTime(m.now) }

// Now is the time of the last Tick.
func (m *Machine) Now() time.Time { return m.now }

// Tick advances the clock to now (never back) and runs a scheduling pass.
func (m *Machine) Tick(now time.Time) {
	if now = now.Round(0); now.After(m.now) {
		m.now = now
	}
	m.expireAgents()
	m.pass()
}

// NextWakeup is when the machine wants a Tick even if nothing happens: a
// reservation, a time limit, an agent's reconnection deadline.
func (m *Machine) NextWakeup() (time.Time, bool) {
	var at time.Time
	if t, ok := m.core.NextWakeup(); ok {
		at = m.origin.Add(t)
	}
	for _, a := range m.agents {
		if !a.up && !a.downSince.IsZero() {
			if d := a.downSince.Add(m.cfg.ReconnectGrace); at.IsZero() || d.Before(at) {
				at = d
			}
		}
	}
	return at, !at.IsZero()
}

// pass runs the core and carries out its decisions.
func (m *Machine) pass() {
	ds, err := m.core.Schedule(m.ct())
	if err != nil {
		panic(fmt.Sprintf("ctl: the core refused a pass: %v", err)) // the core's clock is monotonic by construction
	}
	for _, d := range ds {
		j := m.jobs[int64(d.Job)]
		if j == nil {
			continue // cannot happen: the core knows only the table's jobs
		}
		switch d.Kind {
		case gang.Start:
			m.startJob(j, d)
		case gang.Kill:
			m.endJob(j, api.Timeout, fmt.Sprintf("time limit %v reached", j.Spec.TimeLimit.D))
		case gang.Alternate, gang.AlternateEnd:
			m.setRow(j, d.Row, d.Kind == gang.Alternate)
		}
	}
	if m.resync {
		m.resync = false
		for _, id := range m.order {
			if j := m.jobs[id]; j.State == api.Running {
				want := slices.Sorted(slices.Values(append([]int{j.Row}, m.core.Alternates(gang.JobID(id))...)))
				for _, r := range j.Rows {
					if !slices.Contains(want, r) {
						m.setRow(j, r, false)
					}
				}
				for _, r := range want {
					m.setRow(j, r, true)
				}
			}
		}
	}
}

// setRow adds or removes a row a running job runs in, and tells its agents.
func (m *Machine) setRow(j *job, row int, on bool) {
	if slices.Contains(j.Rows, row) == on {
		return
	}
	if on {
		j.Rows = slices.Insert(j.Rows, sortedIndex(j.Rows, row), row)
	} else {
		j.Rows = slices.DeleteFunc(j.Rows, func(r int) bool { return r == row })
	}
	m.persist(Record{Kind: RecRows, Job: j.ID, Rows: slices.Clone(j.Rows)})
	for _, a := range j.Agents {
		m.send(a, Message{Alternate: &Alternate{Job: j.ID, Row: row, On: on}})
	}
}

func sortedIndex(s []int, v int) int {
	i, _ := slices.BinarySearch(s, v)
	return i
}

func (m *Machine) startJob(j *job, d gang.Decision) {
	nodes := make([]string, len(d.Columns))
	per := map[string][]LaunchRank{}
	for r, col := range d.Columns {
		o := m.owners[col]
		nodes[r] = o.agent
		per[o.agent] = append(per[o.agent], LaunchRank{Rank: r, Slot: o.slot})
	}
	j.place(m.now, d.Row, d.Columns, nodes)
	j.incarnations = map[string]uint64{}
	for _, a := range j.Agents {
		if inc := m.agents[a].incarnation; inc != 0 {
			j.incarnations[a] = inc
		}
	}
	m.persist(Record{Kind: RecStarted, Job: j.ID, At: m.now, Row: d.Row, Columns: slices.Clone(d.Columns), Nodes: slices.Clone(nodes),
		Incarnations: maps.Clone(j.incarnations)})
	m.change(j, "")
	for _, a := range j.Agents {
		// An agent's columns are online only while it is up: it is.
		m.send(a, Message{Launch: m.launchFor(j, a)})
	}
}

// launchFor is the launch of a running job's ranks on agent a.
func (m *Machine) launchFor(j *job, a string) *Launch {
	l := &Launch{Job: j.ID, Size: len(j.Ranks), Row: j.Row, Rows: slices.Clone(j.Rows), Nodes: make([]string, len(j.Ranks))}
	for r, rk := range j.Ranks {
		l.Nodes[r] = rk.Node
		if rk.Node == a {
			l.Ranks = append(l.Ranks, LaunchRank{Rank: r, Slot: m.owners[j.Columns[r]].slot})
		}
	}
	return l
}

// send queues a message for an agent, unless it is down: what it missed
// is reconciled when it comes back.
func (m *Machine) send(to string, msg Message) {
	if a := m.agents[to]; a == nil || !a.up {
		return
	}
	msg.To = to
	m.ready.Messages = append(m.ready.Messages, msg)
}

func (m *Machine) change(j *job, reason string) {
	m.ready.Changes = append(m.ready.Changes, Change{Job: j.ID, State: j.State, Reason: reason})
}

// endJob decides a running job's final state and stops its ranks; the job
// is finished once every rank has gone.
func (m *Machine) endJob(j *job, st api.State, reason string) {
	if j.finishing() || j.State.Done() {
		return
	}
	j.Ending, j.Reason = st, reason
	m.persist(Record{Kind: RecEnding, Job: j.ID, State: st, Reason: reason})
	for _, a := range j.Agents {
		m.send(a, Message{Kill: &Kill{Job: j.ID, Reason: reason}})
	}
	m.maybeFinish(j)
}

// maybeFinish completes a job whose ranks have all ended.
func (m *Machine) maybeFinish(j *job) {
	if j.Exited < len(j.Ranks) || j.State.Done() {
		return
	}
	j.State = api.Completed
	if j.Ending != "" {
		j.State = j.Ending
	}
	j.End = m.now
	if err := m.core.Finished(gang.JobID(j.ID), m.ct()); err != nil {
		panic(fmt.Sprintf("ctl: job %d: the core does not know it: %v", j.ID, err))
	}
	m.persist(Record{Kind: RecFinished, Job: j.ID, At: j.End, State: j.State, Reason: j.Reason})
	m.change(j, j.Reason)
	m.finished(j)
}

// finished adds a job to the history and forgets the oldest beyond
// Config.History.
func (m *Machine) finished(j *job) {
	m.history = append(m.history, j.ID)
	if len(m.history) <= m.cfg.History {
		return
	}
	old := m.history[0]
	m.history = m.history[1:]
	if j := m.jobs[old]; j != nil && j.Spec.SubmitKey != "" {
		delete(m.byKey, j.Spec.SubmitKey)
	}
	delete(m.jobs, old)
	if i := slices.Index(m.order, old); i >= 0 {
		m.order = slices.Delete(m.order, i, i+1)
	}
}

func (m *Machine) addJob(j *job) {
	m.jobs[j.ID] = j
	m.order = append(m.order, j.ID)
	if k := j.Spec.SubmitKey; k != "" {
		m.byKey[k] = j.ID
	}
}

// Submit queues a job and returns its id.
//
// A job may be as wide as the processors of every agent the controller
// knows, up or down (as Slurm queues a job whose nodes are down): one
// wider than those in service waits aside until they are back. Before any
// agent has registered, Submit returns ErrNoAgents.
//
// A spec with the SubmitKey of a job in the table is that job submitted
// again (its answer was lost: the client repeats it): Submit returns its
// id and changes nothing.
func (m *Machine) Submit(spec api.JobSpec) (int64, error) {
	if id, ok := m.byKey[spec.SubmitKey]; ok && spec.SubmitKey != "" {
		if o := m.jobs[id].Spec.Owner; o != nil && spec.Owner != nil && o.UID != spec.Owner.UID {
			return 0, fmt.Errorf("invalid job: submit_key: the key of another user's job")
		}
		return id, nil
	}
	known := m.knownProcessors()
	if known == 0 {
		return 0, ErrNoAgents
	}
	if err := spec.Validate(known); err != nil {
		return 0, err
	}
	id := m.nextID + 1
	if spec.Bench != "" && spec.BenchSeed == 0 {
		spec.BenchSeed = uint64(id) // distinct, reproducible draws per job
	}
	j := &job{Job: Job{ID: id, Spec: spec, State: api.Pending, Submit: m.now}}
	if err := m.core.Submit(m.gangJob(j), m.ct()); err != nil {
		return 0, fmt.Errorf("ctl: %w", err)
	}
	m.nextID = id
	m.addJob(j)
	m.persist(Record{Kind: RecSubmitted, Job: id, At: m.now, Spec: &spec})
	m.change(j, "")
	return id, nil
}

// Cancel ends a job: a pending one leaves the queue, a running one's ranks
// are killed everywhere.
func (m *Machine) Cancel(id int64) error {
	j := m.jobs[id]
	switch {
	case j == nil:
		return fmt.Errorf("job %d: %w", id, ErrNotFound)
	case j.State.Done() || j.finishing():
		return fmt.Errorf("job %d: %w (%s)", id, ErrEnded, j.State)
	case j.State == api.Pending:
		j.State, j.Reason, j.End = api.Cancelled, "cancelled before it started", m.now
		if err := m.core.Finished(gang.JobID(id), m.ct()); err != nil {
			panic(fmt.Sprintf("ctl: job %d: the core does not know it: %v", id, err))
		}
		m.persist(Record{Kind: RecFinished, Job: id, At: m.now, State: j.State, Reason: j.Reason})
		m.change(j, j.Reason)
		m.finished(j)
	default:
		m.endJob(j, api.Cancelled, "cancelled")
	}
	return nil
}

// RankExit records a rank's exit report. Reports of unknown jobs, of
// ranks not on the reporting node, and repeated reports are ignored
// (false).
func (m *Machine) RankExit(x RankExit) bool {
	j := m.jobs[x.Job]
	if j == nil || x.Rank < 0 || x.Rank >= len(j.Ranks) || j.Ranks[x.Rank].Exited || j.Ranks[x.Rank].Node != x.Node {
		return false
	}
	r := api.RankInfo{Rank: x.Rank, Node: x.Node, Exited: true, PID: x.PID, Code: x.Code, Signal: x.Signal, Error: x.Err,
		CPUTime: api.Duration{D: x.CPUTime}, MaxRSS: x.MaxRSS, Bench: x.Stats, Usage: x.Usage}
	if x.Failure != "" && r.Error == "" {
		r.Error = x.Failure
	}
	why := fmt.Sprintf("rank %d on %s %s", x.Rank, x.Node, x.text())
	if x.Reason != "" {
		why = x.Reason
	}
	m.rankEnded(j, r, x.failed() || x.Reason != "", why)
	return true
}

func (m *Machine) rankEnded(j *job, r api.RankInfo, failed bool, why string) {
	j.setRank(r)
	m.persist(Record{Kind: RecRank, Job: j.ID, Rank: &r})
	if failed && !j.finishing() {
		m.endJob(j, api.Failed, why)
	}
	m.maybeFinish(j)
}

// Ready returns the effects of the inputs since the last Advance.
func (m *Machine) Ready() Ready { return m.ready }

// HasReady reports whether Ready has anything to do.
func (m *Machine) HasReady() bool { return !m.ready.Empty() }

// Advance acknowledges the last Ready: its effects were carried out.
func (m *Machine) Advance() { m.ready = Ready{} }

// Slice starts the next slice at now: the row its strobe carries.
func (m *Machine) Slice(now time.Time) Strobe {
	m.seq++
	return Strobe{Seq: m.seq, Row: m.core.Slice(m.coreTime(now)), Epoch: m.memberEpoch}
}

// knownProcessors is the processors of every agent the machine knows, up
// or down.
func (m *Machine) knownProcessors() int {
	n := 0
	for _, a := range m.agents {
		n += a.cpus
	}
	return n
}

// Online is the number of processors in service.
func (m *Machine) Online() int { return m.core.Online() }

// Job returns a copy of one job.
func (m *Machine) Job(id int64) (Job, bool) {
	j := m.jobs[id]
	if j == nil {
		return Job{}, false
	}
	return j.copy(), true
}

// Jobs returns copies of the jobs in submission order: the pending and
// running ones, or all (with the history) with all.
func (m *Machine) Jobs(all bool) []Job {
	var out []Job
	for _, id := range m.order {
		if j := m.jobs[id]; all || !j.State.Done() {
			out = append(out, j.copy())
		}
	}
	return out
}

func (j *job) copy() Job {
	c := j.Job
	c.Rows, c.Columns, c.Agents = slices.Clone(j.Rows), slices.Clone(j.Columns), slices.Clone(j.Agents)
	c.Ranks = slices.Clone(j.Ranks)
	return c
}

// Explain says why a pending job waits.
func (m *Machine) Explain(id int64) string { return m.core.Explain(gang.JobID(id)).String() }

func itoa(n int) string { return strconv.Itoa(n) }
