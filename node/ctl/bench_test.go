package ctl_test

import (
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node/ctl"
)

// history runs 2,000 one-rank jobs to completion on 4 agents (the table
// keeps the last 500) and leaves 100 queued behind a running wide one: a
// journal of every record, and the machine.
func history(b *testing.B) (ctl.Config, []ctl.Record, *ctl.Machine) {
	cfg := ctl.Config{MaxColumns: 64, MPL: 1, Policy: gang.EASY, History: 500}
	m, err := ctl.New(cfg, origin)
	if err != nil {
		b.Fatal(err)
	}
	var journal []ctl.Record
	take := func() {
		journal = append(journal, m.Ready().Records...)
		m.Advance()
	}
	now := origin
	for _, name := range []string{"a", "b", "c", "d"} {
		if err := m.AgentUp(ctl.AgentReport{Name: name, CPUs: 16}); err != nil {
			b.Fatal(err)
		}
	}
	spec := api.JobSpec{Command: []string{"x"}, Processors: 1, TimeLimit: api.Duration{D: time.Hour}}
	for i := range 2000 {
		now = now.Add(time.Second)
		m.Tick(now)
		id, err := m.Submit(spec)
		if err != nil {
			b.Fatal(err)
		}
		m.Tick(now)
		j, _ := m.Job(id)
		m.RankExit(ctl.RankExit{Job: id, Rank: 0, Node: j.Ranks[0].Node, PID: 100 + i})
		take()
	}
	wide := spec
	wide.Processors = 64
	for range 101 {
		if _, err := m.Submit(wide); err != nil {
			b.Fatal(err)
		}
	}
	m.Tick(now)
	take()
	return cfg, journal, m
}

// Restoring from every record against restoring from a snapshot of the
// same state: what compacting a journal saves at a controller's start.
func BenchmarkRestore(b *testing.B) {
	cfg, journal, m := history(b)
	snap := m.Snapshot()
	for _, tc := range []struct {
		name    string
		records []ctl.Record
	}{{"journal", journal}, {"snapshot", snap}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := ctl.Restore(cfg, tc.records, origin.Add(time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tc.records)), "records")
		})
	}
}

// A submission through the machine alone (Tick, Submit, Tick, Ready,
// Advance), the ceiling of the API's rate without a journal.
func BenchmarkSubmit(b *testing.B) {
	m, err := ctl.New(ctl.Config{MaxColumns: 64, MPL: 1, Policy: gang.EASY, History: 1000}, origin)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.AgentUp(ctl.AgentReport{Name: "a", CPUs: 64}); err != nil {
		b.Fatal(err)
	}
	spec := api.JobSpec{Command: []string{"x"}, Processors: 64, TimeLimit: api.Duration{D: time.Hour}}
	now := origin
	n := 0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		m.Tick(now)
		id, err := m.Submit(spec)
		if err != nil {
			b.Fatal(err)
		}
		m.Tick(now)
		m.Ready()
		m.Advance()
		if n++; n%100 == 0 { // keep the queue short: cancel what waits
			for _, j := range m.Jobs(false) {
				if j.ID != id {
					_ = m.Cancel(j.ID)
				}
			}
		}
	}
}
