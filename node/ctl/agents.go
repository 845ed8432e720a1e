package ctl

import (
	"fmt"
	"github.com/cosched/cosched/api"
	"slices"
	"time"
)

// Agent is an agent as the machine knows it.
type Agent struct {
	Name    string
	Up      bool  // its control connection is open
	Columns []int // the matrix columns of its processors
}

// Agents lists the agents that were ever given columns, by name.
func (m *Machine) Agents() []Agent {
	var out []Agent
	for _, name := range slices.Sorted(slices.Values(slices.Clone(m.agentOrder))) {
		out = append(out, Agent{Name: name, Up: m.agents[name].up, Columns: m.columnsOf(name)})
	}
	return out
}

// Targets lists the agents strobes go to (those up), by name.
func (m *Machine) Targets() []string {
	var out []string
	for _, name := range slices.Sorted(slices.Values(slices.Clone(m.agentOrder))) {
		if m.agents[name].up {
			out = append(out, name)
		}
	}
	return out
}

func (m *Machine) columnsOf(name string) []int {
	a := m.agents[name]
	if a == nil {
		return nil
	}
	cols := make([]int, a.cpus)
	for i := range cols {
		cols[i] = a.base + i
	}
	return cols
}

// assignBlock gives an agent's processors their columns, for good.
func (m *Machine) assignBlock(name string, base, cpus int) error {
	if m.agents[name] != nil {
		return fmt.Errorf("agent %s: already has columns", name)
	}
	if base != m.nextCol || cpus < 1 || base+cpus > m.cfg.MaxColumns {
		return fmt.Errorf("agent %s: columns %d+%d: want %d+ (at least one) within %d", name, base, cpus, m.nextCol, m.cfg.MaxColumns)
	}
	m.agents[name] = &agent{base: base, cpus: cpus}
	m.agentOrder = append(m.agentOrder, name)
	m.nextCol += cpus
	for i := range cpus {
		m.owners[base+i] = owner{agent: name, slot: i}
	}
	return nil
}

// AgentUp brings an agent's processors into service and reconciles what
// it runs with the table (see the package comment). It fails, leaving the
// agent down, when the cluster has no columns left for it.
func (m *Machine) AgentUp(r AgentReport) error {
	a := m.agents[r.Name]
	if a == nil {
		if m.nextCol+r.CPUs > m.cfg.MaxColumns || r.CPUs < 1 {
			return fmt.Errorf("ctl: agent %s: no columns for its %d processors (%d of %d taken)", r.Name, r.CPUs, m.nextCol, m.cfg.MaxColumns)
		}
		if err := m.assignBlock(r.Name, m.nextCol, r.CPUs); err != nil {
			return fmt.Errorf("ctl: %w", err)
		}
		m.persist(Record{Kind: RecAgent, Agent: r.Name, Base: m.agents[r.Name].base, CPUs: r.CPUs})
		a = m.agents[r.Name]
	}
	a.incarnation, a.keeps = r.Incarnation, r.KeepsRanks
	if !a.up {
		a.up, a.downSince = true, time.Time{}
		m.membersChanged()
	}
	if err := m.core.SetOffline(m.columnsOf(r.Name), false, m.ct()); err != nil {
		panic(fmt.Sprintf("ctl: agent %s: %v", r.Name, err)) // its columns are within the machine by construction
	}
	// The core admits jobs by memory from what the agent offers: an equal
	// share per processor (0: not advertised, the machine's value).
	if r.CPUs > 0 && r.Memory >= 0 {
		if err := m.core.SetColumnMemory(m.columnsOf(r.Name), r.Memory/int64(r.CPUs), m.ct()); err != nil {
			panic(fmt.Sprintf("ctl: agent %s: %v", r.Name, err)) // as above
		}
	}
	for _, x := range r.Exits {
		x.Node = r.Name
		m.RankExit(x)
	}
	live := map[int64][]LiveRank{}
	var ids []int64
	for _, lr := range r.Ranks {
		if _, ok := live[lr.Job]; !ok {
			ids = append(ids, lr.Job)
		}
		live[lr.Job] = append(live[lr.Job], lr)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := m.jobs[id]
		switch {
		case j == nil:
			m.send(r.Name, Message{Kill: &Kill{Job: id, Reason: "not a job of this controller"}})
			continue
		case j.State != api.Running:
			m.send(r.Name, Message{Kill: &Kill{Job: id, Reason: "job ended: " + string(j.State)}})
			continue
		case j.finishing():
			m.send(r.Name, Message{Kill: &Kill{Job: id, Reason: j.Reason}})
		}
		for _, lr := range live[id] {
			if lr.Rank < 0 || lr.Rank >= len(j.Ranks) {
				continue
			}
			if rk := j.Ranks[lr.Rank]; rk.Node == r.Name && !rk.Exited && rk.PID != lr.PID {
				rk.PID = lr.PID
				j.setRank(rk)
				m.persist(Record{Kind: RecRank, Job: id, Rank: &rk})
			}
		}
	}
	// Ranks placed here that the agent neither runs nor saw end are lost
	// (it restarted, or a launch never reached it).
	for _, id := range slices.Clone(m.order) {
		j := m.jobs[id]
		if j == nil || j.State != api.Running || !slices.Contains(j.Agents, r.Name) {
			continue
		}
		if neverLaunched(j, r) {
			// The controller that started the job died before its launch
			// went out (its records are journaled first): the same life of
			// the agent that was chosen never heard of the job. Nothing
			// of it ran there; launch it now.
			m.send(r.Name, Message{Launch: m.launchFor(j, r.Name)})
			continue
		}
		for i := range j.Ranks {
			rk := j.Ranks[i]
			if rk.Node != r.Name || rk.Exited || slices.ContainsFunc(live[id], func(lr LiveRank) bool { return lr.Rank == i }) {
				continue
			}
			rk.Exited, rk.Code, rk.Error = true, -1, "lost: node "+r.Name+" does not run it"
			m.rankEnded(j, rk, true, fmt.Sprintf("rank %d lost on %s", i, r.Name))
		}
		if j.State == api.Running && !j.finishing() && m.cfg.MPL > 1 {
			// Rows may have changed while it was away: restate them all.
			for row := range m.cfg.MPL {
				m.send(r.Name, Message{Alternate: &Alternate{Job: id, Row: row, On: slices.Contains(j.Rows, row)}})
			}
		}
	}
	return nil
}

// neverLaunched reports whether the agent of report r provably never got
// running job j's launch: the same life of it that the job started on says
// it has had no launch of the job, and it would remember one (its
// Launched list is complete above LaunchedFloor), and it runs none of it.
func neverLaunched(j *job, r AgentReport) bool {
	inc := j.incarnations[r.Name]
	if inc == 0 || inc != r.Incarnation || j.ID <= r.LaunchedFloor || slices.Contains(r.Launched, j.ID) || j.finishing() {
		return false
	}
	for _, rk := range j.Ranks {
		if rk.Node == r.Name && (rk.Exited || rk.PID != 0) {
			return false // something of it ran there after all
		}
	}
	return !slices.ContainsFunc(r.Ranks, func(lr LiveRank) bool { return lr.Job == j.ID })
}

// AgentDown takes an agent's processors out of service: its connection is
// gone, but it may come back within Config.ReconnectGrace with its ranks.
func (m *Machine) AgentDown(name string) {
	a := m.agents[name]
	if a == nil || !a.up {
		return
	}
	a.up, a.downSince = false, m.now
	if err := m.core.SetOffline(m.columnsOf(name), true, m.ct()); err != nil {
		panic(fmt.Sprintf("ctl: agent %s: %v", name, err))
	}
	m.membersChanged()
}

// AgentGone takes an agent out of service for good: it left or died, and
// the jobs that had ranks there fail.
func (m *Machine) AgentGone(name, why string) {
	a := m.agents[name]
	if a == nil {
		return
	}
	m.AgentDown(name)
	a.downSince = time.Time{} // nothing to wait for
	for _, id := range slices.Clone(m.order) {
		j := m.jobs[id]
		if j == nil || j.State != api.Running || !slices.Contains(j.Agents, name) {
			continue
		}
		for i := range j.Ranks {
			if rk := j.Ranks[i]; rk.Node == name && !rk.Exited {
				rk.Exited, rk.Code, rk.Error = true, -1, "node "+name+" down"
				m.rankEnded(j, rk, true, fmt.Sprintf("node %s %s", name, why))
			}
		}
	}
}

// AgentLeft handles an agent's departure from the cluster (gossip says it
// left or died): one whose ranks outlive it (KeepsRanks) is only down, and
// has Config.ReconnectGrace to come back with them (a restart); the
// others' ranks died with them, and their jobs fail now.
func (m *Machine) AgentLeft(name string) {
	if a := m.agents[name]; a != nil && a.keeps {
		m.AgentDown(name)
		return
	}
	m.AgentGone(name, "left the cluster")
}

// expireAgents gives up on agents that did not come back in time.
func (m *Machine) expireAgents() {
	for _, name := range m.agentOrder {
		a := m.agents[name]
		if !a.up && !a.downSince.IsZero() && !m.now.Before(a.downSince.Add(m.cfg.ReconnectGrace)) {
			m.AgentGone(name, "did not come back within "+m.cfg.ReconnectGrace.String())
		}
	}
}

func (m *Machine) membersChanged() {
	m.memberEpoch++
	m.ready.MembersChanged = true
	m.ready.Targets = m.Targets()
}
