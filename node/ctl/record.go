package ctl

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
)

// RecordKind is what a Record says. The values are part of journals on
// disk: append only.
type RecordKind uint8

// Record kinds.
const (
	RecOrigin    RecordKind = 1 // At: time zero of the core's clock
	RecAgent     RecordKind = 2 // Agent's block of columns: Base, CPUs
	RecSubmitted RecordKind = 3 // Job submitted At with Spec
	RecStarted   RecordKind = 4 // Job started At in Row on Columns, rank i on Nodes[i]
	RecRows      RecordKind = 5 // Job now runs in Rows
	RecRank      RecordKind = 6 // Job's Rank: its pid (adopted) or its exit
	RecEnding    RecordKind = 7 // Job ends as State (Reason); its ranks are being stopped
	RecFinished  RecordKind = 8 // Job finished At as State (Reason)
	RecNextID    RecordKind = 9 // the last id given is Job (snapshots: jobs may have been forgotten)
)

var recordNames = [...]string{"?", "origin", "agent", "submitted", "started", "rows", "rank", "ending", "finished", "next-id"}

func (k RecordKind) String() string {
	if int(k) < len(recordNames) {
		return recordNames[k]
	}
	return fmt.Sprintf("record(%d)", k)
}

// Record is one change to persist. It is a flat, msgpack-serializable
// union: Kind says which fields are set.
type Record struct {
	Kind    RecordKind    `msgpack:"k"`
	Job     int64         `msgpack:"j,omitempty"`
	At      time.Time     `msgpack:"t,omitempty"`
	Spec    *api.JobSpec  `msgpack:"spec,omitempty"`
	Row     int           `msgpack:"row,omitempty"`
	Rows    []int         `msgpack:"rows,omitempty"`
	Columns []int         `msgpack:"cols,omitempty"`
	Nodes   []string      `msgpack:"nodes,omitempty"`
	Rank    *api.RankInfo `msgpack:"rank,omitempty"`
	State   api.State     `msgpack:"state,omitempty"`
	Reason  string        `msgpack:"reason,omitempty"`
	Agent   string        `msgpack:"agent,omitempty"`
	Base    int           `msgpack:"base,omitempty"`
	CPUs    int           `msgpack:"cpus,omitempty"`
	// Incarnations (RecStarted): each agent's life when the job started
	// there (see AgentReport.Incarnation).
	Incarnations map[string]uint64 `msgpack:"inc,omitempty"`
}

func (m *Machine) persist(r Record) { m.ready.Records = append(m.ready.Records, r) }

// Restore rebuilds a machine from the records another emitted (or its
// Snapshot), at now. Every agent starts down: agents come back with
// AgentUp, and their ranks are reconciled then. A record that contradicts
// the ones before it is an error naming its index.
func Restore(cfg Config, records []Record, now time.Time) (*Machine, error) {
	m, err := newMachine(cfg, now)
	if err != nil {
		return nil, err
	}
	for i, r := range records {
		if err := m.apply(r); err != nil {
			return nil, fmt.Errorf("ctl: record %d (%s): %w", i, r.Kind, err)
		}
	}
	if m.now.Before(now) {
		m.now = now
	}
	for _, a := range m.agents {
		a.downSince = m.now // each has ReconnectGrace to come back with its ranks
	}
	if err := m.rebuildCore(); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(records, func(r Record) bool { return r.Kind == RecOrigin }) {
		m.persist(Record{Kind: RecOrigin, At: m.origin}) // an empty journal: this is a first start
	}
	m.resync = true
	return m, nil
}

// apply replays one record into the tables (not the core).
func (m *Machine) apply(r Record) error {
	if r.At.After(m.now) {
		m.now = r.At
	}
	if r.Kind == RecOrigin {
		m.origin = r.At
		return nil
	}
	if r.Kind == RecAgent {
		return m.assignBlock(r.Agent, r.Base, r.CPUs)
	}
	if r.Kind == RecNextID {
		m.nextID = max(m.nextID, r.Job)
		return nil
	}
	if r.Kind == RecSubmitted {
		if r.Spec == nil || m.jobs[r.Job] != nil || r.Job <= 0 {
			return fmt.Errorf("job %d: duplicate, or no spec", r.Job)
		}
		m.nextID = max(m.nextID, r.Job)
		m.addJob(&job{Job: Job{ID: r.Job, Spec: *r.Spec, State: api.Pending, Submit: r.At}})
		return nil
	}
	j := m.jobs[r.Job]
	if j == nil {
		return fmt.Errorf("job %d: not submitted", r.Job)
	}
	switch r.Kind {
	case RecStarted:
		if len(r.Nodes) != len(r.Columns) {
			return fmt.Errorf("job %d: %d nodes for %d columns", r.Job, len(r.Nodes), len(r.Columns))
		}
		j.place(r.At, r.Row, r.Columns, r.Nodes)
		j.incarnations = maps.Clone(r.Incarnations)
	case RecRows:
		j.Rows = slices.Clone(r.Rows)
	case RecRank:
		if r.Rank == nil || r.Rank.Rank < 0 || r.Rank.Rank >= len(j.Ranks) {
			return fmt.Errorf("job %d: no such rank", r.Job)
		}
		j.setRank(*r.Rank)
	case RecEnding:
		j.Ending, j.Reason = r.State, r.Reason
	case RecFinished:
		j.State, j.Reason, j.End = r.State, r.Reason, r.At
		m.finished(j)
	default:
		return fmt.Errorf("unknown kind %d", r.Kind)
	}
	return nil
}

// rebuildCore gives a fresh core the jobs of the table: the queued ones in
// id order, the running ones at their placement.
func (m *Machine) rebuildCore() error {
	core, err := m.newCore()
	if err != nil {
		return err
	}
	m.core, m.coreNow = core, 0
	t := m.coreTime(m.now)
	for _, id := range m.order {
		j := m.jobs[id]
		gj := m.gangJob(j)
		gj.Submit = min(gj.Submit, t)
		switch {
		case j.State == api.Pending:
			err = core.Submit(gj, t)
		case j.State == api.Running:
			err = core.Resume(gj, j.Row, j.Columns, min(max(j.Start.Sub(m.origin), 0), t), t)
		}
		if err != nil {
			return fmt.Errorf("ctl: rebuilding the core: %w", err)
		}
	}
	return nil
}

// Snapshot returns the fewest records that rebuild the machine's state
// with Restore: a journal can replace everything it holds with them.
func (m *Machine) Snapshot() []Record {
	rs := []Record{{Kind: RecOrigin, At: m.origin}, {Kind: RecNextID, Job: m.nextID}}
	for _, name := range m.agentOrder {
		a := m.agents[name]
		rs = append(rs, Record{Kind: RecAgent, Agent: name, Base: a.base, CPUs: a.cpus})
	}
	for _, id := range m.order {
		j := m.jobs[id]
		spec := j.Spec
		rs = append(rs, Record{Kind: RecSubmitted, Job: id, At: j.Submit, Spec: &spec})
		if j.Start.IsZero() && j.State != api.Running {
			continue
		}
		nodes := make([]string, len(j.Ranks))
		for i, r := range j.Ranks {
			nodes[i] = r.Node
		}
		rs = append(rs, Record{Kind: RecStarted, Job: id, At: j.Start, Row: j.Row, Columns: slices.Clone(j.Columns), Nodes: nodes,
			Incarnations: maps.Clone(j.incarnations)})
		if !slices.Equal(j.Rows, []int{j.Row}) { // started: its own row only
			rs = append(rs, Record{Kind: RecRows, Job: id, Rows: slices.Clone(j.Rows)})
		}
		for _, r := range j.Ranks {
			if r.Exited || r.PID != 0 {
				ri := r
				rs = append(rs, Record{Kind: RecRank, Job: id, Rank: &ri})
			}
		}
		if j.Ending != "" {
			rs = append(rs, Record{Kind: RecEnding, Job: id, State: j.Ending, Reason: j.Reason})
		}
	}
	// The history in the order the jobs ended: it decides which is
	// forgotten next.
	for _, id := range m.history {
		j := m.jobs[id]
		rs = append(rs, Record{Kind: RecFinished, Job: id, At: j.End, State: j.State, Reason: j.Reason})
	}
	return rs
}

// gangJob is what the core knows of a job.
func (m *Machine) gangJob(j *job) gang.Job {
	return gang.Job{ID: gang.JobID(j.ID), Submit: max(j.Submit.Sub(m.origin), 0), Processors: j.Spec.Processors,
		Estimate: j.Spec.TimeLimit.D, Memory: j.Spec.Memory, Template: j.Spec.Bench, Extend: j.Spec.Overrun == "extend"}
}
