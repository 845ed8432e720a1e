package agentctl

import (
	"cmp"
	"slices"
	"strconv"
)

// Bounds (see the package comment).
const (
	// MaxPending bounds the exits kept while no controller is connected.
	MaxPending = 10000
	// MaxWelcomeExits bounds the exits a welcome carries, so that it stays
	// well within a control frame (an exit is a few hundred bytes at most).
	MaxWelcomeExits = 500
	// MaxDelivered (less than MaxWelcomeExits) bounds the exits repeated
	// to every controller that connects: one written to the previous
	// controller is not journaled by it if it died first. The controller
	// ignores the repeats it has.
	MaxDelivered = 256
)

// Config configures a Machine.
type Config struct {
	// Incarnation names this life of the agent (random at its start, not
	// 0): with Launched, a controller tells a launch that never arrived
	// from ranks that died.
	Incarnation uint64
	// Keeps: the agent's ranks outlive it (said in the welcome).
	Keeps bool
}

type rankKey struct {
	job  int64
	rank int
}

// Machine is the agent's side of the control protocol. It is not safe for
// concurrent use: its caller serialises inputs and carries out each
// input's Ready before the next input.
type Machine struct {
	cfg      Config
	launched Launched
	// link is the current link (0: none); welcomes counts the welcomes
	// given, and each one's link is its number.
	link, welcomes uint64
	// unreported are the ranks of the launches taken (and adopted) whose
	// exit is not reported (queued or pending), with their pid once
	// started: a welcome lists them, so that a rank still starting or
	// whose exit is on its way is never taken for lost.
	unreported map[rankKey]int
	pending    []Exit // exits no controller has heard of
	// delivered are the latest exits queued for a controller: every
	// welcome repeats them.
	delivered []Exit
	// queued are each open link's exits not yet written, oldest first;
	// a link's entry goes when its writer stops (Broken).
	queued map[uint64][]Exit

	rd Ready
}

// New returns a machine with no controller connected.
func New(cfg Config) *Machine {
	return &Machine{cfg: cfg, unreported: map[rankKey]int{}, queued: map[uint64][]Exit{}}
}

// Ready returns the effects of the inputs since the last call, and forgets
// them.
func (m *Machine) Ready() Ready {
	rd := m.rd
	m.rd = Ready{}
	return rd
}

// Connected reports whether a controller's link is current.
func (m *Machine) Connected() bool { return m.link != 0 }

// Current reports whether link is the latest welcome's: a message read on
// an older one is stale.
func (m *Machine) Current(link uint64) bool { return link == m.welcomes }

// Welcomes is the number of the latest welcome (0: none yet): the link a
// launch taken now counts against.
func (m *Machine) Welcomes() uint64 { return m.welcomes }

// Connect answers a controller's hello on a new connection: the previous
// link closes, and a new one opens with the welcome (Ready.Welcome), then
// the pending exits that did not fit it. live are the ranks whose process
// runs (the caller asks its rank manager), jobs the jobs the agent runs.
// It returns the new link's number.
func (m *Machine) Connect(live []Rank, jobs []int64) uint64 {
	w := &Welcome{Jobs: slices.Clone(jobs), Incarnation: m.cfg.Incarnation, Keeps: m.cfg.Keeps}
	listed := map[rankKey]bool{}
	for _, r := range live {
		w.Ranks = append(w.Ranks, r)
		listed[rankKey{r.Job, r.Rank}] = true
	}
	for k, pid := range m.unreported {
		if !listed[k] {
			w.Ranks = append(w.Ranks, Rank{Job: k.job, Rank: k.rank, PID: pid})
		}
	}
	slices.SortFunc(w.Ranks, func(x, y Rank) int { return cmp.Or(cmp.Compare(x.Job, y.Job), cmp.Compare(x.Rank, y.Rank)) })
	w.Launched, w.LaunchedFloor = m.launched.List()
	// An exit whose link broke before writing it is pending again and
	// still among the delivered: once is enough.
	m.pending = slices.DeleteFunc(m.pending, func(x Exit) bool { return slices.ContainsFunc(m.delivered, x.Same) })
	n := min(len(m.pending), MaxWelcomeExits-len(m.delivered))
	w.Exits = append(slices.Clone(m.delivered), m.pending[:n]...)
	w.Handed = n
	handed := slices.Clone(m.pending[:n])
	if m.link != 0 {
		m.rd.Close = append(m.rd.Close, m.link)
	}
	m.welcomes++
	m.link = m.welcomes
	w.Link = m.link
	m.rd.Welcome = w
	m.queued[m.link] = handed
	for _, x := range handed {
		m.deliver(x) // this controller may die before it journals them
	}
	rest := m.pending[n:]
	m.pending = nil
	for _, x := range rest {
		m.queue(x)
	}
	m.rd.LinkChanged = true
	return m.link
}

// Verdict is what becomes of a launch read on a link.
type Verdict int

const (
	// Taken: its ranks are to be started.
	Taken Verdict = iota
	// Stale: read on a link a newer welcome replaced, which did not list
	// it; dropped (the controller that wants it sends it again).
	Stale
	// Duplicate: this life has the job already (it took a launch of it,
	// or holds ranks of it a previous life kept); dropped, so that no
	// rank runs twice. A controller sends a launch again only to a life
	// whose welcome proves it never got it (node/ctl, neverLaunched).
	Duplicate
)

func (v Verdict) String() string {
	switch v {
	case Taken:
		return "taken"
	case Stale:
		return "stale"
	case Duplicate:
		return "duplicate"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Launch takes a launch read on link before the agent starts its ranks:
// its job joins the launched list and its ranks are unreported until
// their exits. Only a Taken launch is started.
func (m *Machine) Launch(link uint64, job int64, ranks []int) Verdict {
	if link != m.welcomes {
		return Stale
	}
	if m.launched.Has(job) {
		return Duplicate
	}
	for _, r := range ranks {
		if _, ok := m.unreported[rankKey{job, r}]; ok {
			return Duplicate
		}
	}
	m.launched.Add(job)
	for _, r := range ranks {
		m.unreported[rankKey{job, r}] = 0
	}
	return Taken
}

// Started records a started rank's pid for the welcomes that list it
// before its exit is reported.
func (m *Machine) Started(job int64, rank, pid int) {
	if _, ok := m.unreported[rankKey{job, rank}]; ok {
		m.unreported[rankKey{job, rank}] = pid
	}
}

// Adopt takes back ranks a previous life of the agent kept: each is listed
// in the welcomes until its exit is reported, ended ones too (their exits
// come as Exit; a controller told of neither would call them lost).
func (m *Machine) Adopt(ranks []Rank) {
	for _, r := range ranks {
		m.unreported[rankKey{r.Job, r.Rank}] = r.PID
	}
}

// Exit reports a rank's end: queued on the current link, or pending for
// the next controller.
func (m *Machine) Exit(x Exit) {
	delete(m.unreported, rankKey{x.Job, x.Rank})
	m.queue(x)
}

// Written records that link's writer wrote a frame carrying exits (a
// welcome's: all of its exits, repeated ones too): they have reached a
// controller, and their kept records may go (Ready.Forget).
func (m *Machine) Written(link uint64, exits []Exit) {
	q := m.queued[link]
	for _, x := range exits {
		switch i := slices.IndexFunc(q, x.Same); {
		case i == 0:
			q = q[1:] // the usual case: a link writes in order
		case i > 0:
			q = slices.Delete(q, i, i+1)
		}
		m.rd.Forget = append(m.rd.Forget, x)
	}
	if _, ok := m.queued[link]; ok {
		m.queued[link] = q
	}
}

// Broken records that link's writer stopped: its exits not yet written go
// to the current link (a newer controller's welcome repeated them already,
// since they were delivered when queued; once more is harmless) or back to
// pending, before those that ended since.
func (m *Machine) Broken(link uint64) {
	unwritten := m.queued[link]
	delete(m.queued, link)
	if m.link == link {
		m.link = 0
		m.rd.LinkChanged = true
	}
	if len(unwritten) == 0 {
		return
	}
	if m.link != 0 {
		for _, x := range unwritten {
			m.queue(x)
		}
		return
	}
	m.pending = append(unwritten, m.pending...)
	if len(m.pending) > MaxPending {
		m.pending = m.pending[:MaxPending]
	}
}

// Disconnect records that link's reader ended: if it is current, it
// closes (its writer then reports Broken).
func (m *Machine) Disconnect(link uint64) {
	if link != 0 && m.link == link {
		m.rd.Close = append(m.rd.Close, link)
		m.link = 0
		m.rd.LinkChanged = true
	}
}

// ControllerGone records that the controller left the cluster (gossip
// knows before TCP does): the current link closes, and a controller in
// fact alive dials again.
func (m *Machine) ControllerGone() {
	if m.link != 0 {
		m.rd.Close = append(m.rd.Close, m.link)
		m.link = 0
	}
	m.rd.LinkChanged = true
}

// queue queues x on the current link, or keeps it pending without one.
// Queued, it counts as delivered: a welcome built before the writer gets
// to it repeats it, so a controller that replaces this one hears of it
// either way.
func (m *Machine) queue(x Exit) {
	if m.link != 0 {
		m.rd.Writes = append(m.rd.Writes, Write{Link: m.link, Exit: x})
		m.queued[m.link] = append(m.queued[m.link], x)
		m.deliver(x)
		return
	}
	if len(m.pending) < MaxPending {
		m.pending = append(m.pending, x)
	}
}

// deliver records x among the latest exits delivered, which every welcome
// repeats.
func (m *Machine) deliver(x Exit) {
	if slices.ContainsFunc(m.delivered, x.Same) {
		return // queued again after its link broke
	}
	if len(m.delivered) == MaxDelivered {
		m.delivered = slices.Delete(m.delivered, 0, 1)
	}
	m.delivered = append(m.delivered, x)
}

// Status is what the machine holds, for tests and debugging.
type Status struct {
	Link       uint64
	Welcomes   uint64
	Unreported []Rank
	Pending    []Exit
	Delivered  []Exit
	Queued     map[uint64][]Exit
}

// Status returns a copy of the machine's state.
func (m *Machine) Status() Status {
	s := Status{Link: m.link, Welcomes: m.welcomes, Pending: slices.Clone(m.pending), Delivered: slices.Clone(m.delivered), Queued: map[uint64][]Exit{}}
	for k, pid := range m.unreported {
		s.Unreported = append(s.Unreported, Rank{Job: k.job, Rank: k.rank, PID: pid})
	}
	slices.SortFunc(s.Unreported, func(x, y Rank) int { return cmp.Or(cmp.Compare(x.Job, y.Job), cmp.Compare(x.Rank, y.Rank)) })
	for l, q := range m.queued {
		s.Queued[l] = slices.Clone(q)
	}
	return s
}
