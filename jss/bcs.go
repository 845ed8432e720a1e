package jss

import (
	"slices"
	"time"

	"github.com/cosched/cosched/bench"
)

// bcsModel is buffered coscheduling at process level.
//
// Every processor is a node with one process per row it hosts. At each
// strobe (the start of a slice) the node delivers messages its processes
// handed it, first in, first out, at most hmax per slice (h_max = slice ×
// bandwidth), and barriers whose last process arrived during the slice
// complete. Then the node runs the slice's row's process; whenever that
// process is blocked (waiting for a message or a barrier) or absent, the
// node runs the next ready process it hosts, in row order after the
// slice's row (process-level slot reuse). Nothing unblocks within a slice,
// since deliveries happen only at strobes. Each switch to a different
// process costs ProcessSwitch.
//
// A process iterates: compute (its program's draw), then communicate:
//   - B: for each step, hand the message for To to the node, then wait for
//     the message from From (delivered at a later strobe);
//   - NB: hand all the iteration's messages to the node, arrive at the
//     barrier, and wait for the barrier and for every incoming message;
//   - barrier: arrive at the barrier and wait.
//
// A job ends when its last process finishes its last iteration.
//
// Calibrated overheads (Overheads, zero by default): each process first
// spends Launch of its running time starting up; deliveries and barrier
// releases reach the processes Delivery after the strobe, so a process
// they unblock is ready only then (its node runs other ready processes
// meanwhile, and the process then takes its processor back in row order);
// with SoloSync a one-process job's iterations end at a strobe too.
type bcsModel struct {
	slice    time.Duration
	pswitch  time.Duration
	launch   time.Duration
	delivery time.Duration
	soloSync bool
	hmax     int64 // messages a node delivers per slice
	mpl      int
	nodes    []bcsNode
	jobs     []*tsJob // running
	switches int64
	reuses   int64
	steps    int64
	messages int64
	compute  time.Duration
}

type bcsNode struct {
	res  []*bcsProc // by row
	fifo []msgBatch // messages handed to the node, not yet delivered
	head int
	last *bcsProc // the process that ran last
}

type msgBatch struct {
	p *bcsProc
	n int64
}

const (
	phaseCompute = iota
	phaseSteps   // B: communicating step by step
	phaseWait    // NB and barrier: at the barrier
	phaseDone
)

type bcsProc struct {
	job       *tsJob
	rank      int
	node      int
	iter      int
	rem       time.Duration // compute left in this iteration
	step      int           // B: the step in progress
	phase     uint8
	blocked   bool
	wake      time.Duration // not ready before (Overheads.Delivery)
	setup     time.Duration // start-up left (Overheads.Launch)
	sent      int64         // messages handed to the node
	delivered int64         // of those, delivered
}

// bcsJobState is a running job's processes and barriers. A process can be
// at most one barrier ahead of another, so two generations (by iteration
// parity) suffice.
type bcsJobState struct {
	prog     *Program
	procs    []bcsProc
	arrived  [2]int
	released [2]bool
	left     [2]int
	doneN    int
}

func newBCSModel(cfg *ModelConfig) *bcsModel {
	m := &bcsModel{
		slice:    cfg.Slice,
		pswitch:  cfg.ProcessSwitch,
		launch:   cfg.Overheads.Launch,
		delivery: cfg.Overheads.Delivery,
		soloSync: cfg.Overheads.SoloSync,
		mpl:      cfg.Scheduler.MPL,
		nodes:    make([]bcsNode, cfg.Scheduler.Machine.Processors),
		hmax:     max(1, int64(cfg.Slice.Seconds()*cfg.Network.Bandwidth)/int64(cfg.Network.MessageSize)),
	}
	for i := range m.nodes {
		m.nodes[i].res = make([]*bcsProc, m.mpl)
	}
	return m
}

func (m *bcsModel) start(j *tsJob) {
	prog := j.program
	st := &bcsJobState{prog: prog, procs: make([]bcsProc, prog.Procs)}
	for q := range st.procs {
		p := &st.procs[q]
		*p = bcsProc{job: j, rank: q, node: j.cols[q], rem: prog.work(q, 0), setup: m.launch}
		m.nodes[p.node].res[j.row] = p
	}
	j.bcs = st
	m.jobs = append(m.jobs, j)
}

func (m *bcsModel) alternate(*tsJob, int, bool) {} // BCS reuses slots per process instead

func (m *bcsModel) finish(j *tsJob) {
	for q := range j.bcs.procs {
		p := &j.bcs.procs[q]
		nd := &m.nodes[p.node]
		nd.res[j.row] = nil
		if nd.last == p {
			nd.last = nil
		}
		// Every message of a finished job was received, so none is left;
		// drop empty remains defensively.
		nd.fifo = slices.DeleteFunc(nd.fifo[nd.head:], func(b msgBatch) bool { return b.p.job == j })
		nd.head = 0
	}
	m.jobs = slices.DeleteFunc(m.jobs, func(x *tsJob) bool { return x == j })
}

func (m *bcsModel) runSlice(t time.Duration, row int, done func(*tsJob)) {
	m.strobe(t, done)
	for i := range m.nodes {
		m.runNode(&m.nodes[i], t, row, done)
	}
}

// strobe delivers buffered messages and completes barriers at time t; the
// processes they unblock are ready at t + Delivery.
func (m *bcsModel) strobe(t time.Duration, done func(*tsJob)) {
	ready := t + m.delivery
	for i := range m.nodes {
		nd := &m.nodes[i]
		budget := m.hmax
		for nd.head < len(nd.fifo) && budget > 0 {
			b := &nd.fifo[nd.head]
			k := min(b.n, budget)
			b.p.delivered += k
			m.messages += k
			b.n -= k
			budget -= k
			if b.n == 0 {
				nd.head++
			}
		}
		if nd.head == len(nd.fifo) {
			nd.fifo, nd.head = nd.fifo[:0], 0
		}
	}
	for _, j := range m.jobs {
		st := j.bcs
		n := len(st.procs)
		for g := range st.arrived {
			if st.arrived[g] == n {
				st.released[g] = true
			}
		}
		for q := range st.procs {
			p := &st.procs[q]
			if !p.blocked {
				continue
			}
			m.steps++
			switch p.phase {
			case phaseSteps:
				if m.received(p, p.step) {
					p.blocked, p.wake = false, ready
					if p.step == st.prog.perIter-1 {
						// The last receive of the iteration needs no processor.
						p.step++
						m.nextIteration(p, ready, done)
					}
				}
			case phaseWait:
				g := p.iter % 2
				if st.released[g] && m.allReceived(p) {
					p.blocked, p.wake = false, ready
					st.left[g]++
					if st.left[g] == n {
						st.arrived[g], st.released[g], st.left[g] = 0, false, 0
					}
					m.nextIteration(p, ready, done)
				}
			}
		}
	}
}

// received reports whether process p's message of step s in its current
// iteration has been delivered: its sender's messages are delivered in
// the order sent, and that one is the sender's (iteration × per-iteration
// + s)-th.
func (m *bcsModel) received(p *bcsProc, s int) bool {
	st := p.job.bcs
	from := &st.procs[st.prog.steps[p.rank][s].From]
	return from.delivered > int64(p.iter*st.prog.perIter+s)
}

func (m *bcsModel) allReceived(p *bcsProc) bool {
	for s := 0; s < p.job.bcs.prog.perIter; s++ {
		if !m.received(p, s) {
			return false
		}
	}
	return true
}

// runNode runs node nd's processes in the slice [t, t+slice) of row. The
// slice is cut at every wake-up of a process (Overheads.Delivery); each
// part runs the ready processes in row order, so a process waking up takes
// the processor back from one of a later row.
func (m *bcsModel) runNode(nd *bcsNode, t time.Duration, row int, done func(*tsJob)) {
	now, end := t, t+m.slice
	for now < end {
		next := end
		for _, p := range nd.res {
			if p != nil && p.wake > now && p.wake < next {
				next = p.wake
			}
		}
		budget := next - now
		for k := 0; k < m.mpl && budget > 0; k++ {
			p := nd.res[(row+k)%m.mpl]
			if p == nil || p.blocked || p.phase == phaseDone || p.wake > now {
				continue
			}
			if nd.last != p {
				m.switches++
				if k > 0 {
					m.reuses++
				}
				budget -= min(m.pswitch, budget)
				nd.last = p
			}
			budget = m.run(p, next, budget, done)
		}
		now = next
	}
}

// run lets process p use up to budget of the time that ends at end (so it
// starts at end − budget) and returns what is left.
func (m *bcsModel) run(p *bcsProc, end, budget time.Duration, done func(*tsJob)) time.Duration {
	st := p.job.bcs
	for budget > 0 {
		m.steps++
		switch p.phase {
		case phaseCompute:
			if p.setup > 0 {
				d := min(p.setup, budget)
				p.setup -= d
				budget -= d
				continue
			}
			if p.rem > budget {
				p.rem -= budget
				m.compute += budget
				return 0
			}
			budget -= p.rem
			m.compute += p.rem
			p.rem = 0
			now := end - budget
			switch {
			case st.prog.Procs == 1 && !m.soloSync:
				m.nextIteration(p, now, done)
			case st.prog.Template.Pattern == bench.Barrier || st.prog.Template.Sync == bench.NonBlocking:
				m.send(p, int64(st.prog.perIter))
				st.arrived[p.iter%2]++
				p.phase, p.blocked = phaseWait, true
				return budget
			default:
				p.phase, p.step = phaseSteps, 0
			}
		case phaseSteps:
			for p.step < st.prog.perIter {
				if p.sent == int64(p.iter*st.prog.perIter+p.step) {
					m.send(p, 1)
				}
				if !m.received(p, p.step) {
					p.blocked = true
					return budget
				}
				p.step++
			}
			m.nextIteration(p, end-budget, done)
		default:
			return budget
		}
	}
	return budget
}

// send hands n messages of p to its node.
func (m *bcsModel) send(p *bcsProc, n int64) {
	if n == 0 {
		return
	}
	nd := &m.nodes[p.node]
	if l := len(nd.fifo); l > nd.head && nd.fifo[l-1].p == p {
		nd.fifo[l-1].n += n
	} else {
		nd.fifo = append(nd.fifo, msgBatch{p: p, n: n})
	}
	p.sent += n
}

// nextIteration moves p past its communication at time now: to its next
// compute phase, or done.
func (m *bcsModel) nextIteration(p *bcsProc, now time.Duration, done func(*tsJob)) {
	st := p.job.bcs
	p.iter++
	if p.iter == st.prog.Iterations {
		p.phase = phaseDone
		st.doneN++
		if st.doneN == len(st.procs) {
			j := p.job
			j.done, j.end = true, now
			done(j)
		}
		return
	}
	p.phase, p.step, p.rem = phaseCompute, 0, st.prog.work(p.rank, p.iter)
}

func (m *bcsModel) stats(st *ModelStats) {
	st.Switches += m.switches
	st.Reuses += m.reuses
	st.Messages += m.messages
	st.Steps += m.steps
	st.Executed += m.compute
}
