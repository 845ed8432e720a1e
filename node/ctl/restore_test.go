package ctl_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node/ctl"
)

// Any sequence of inputs, then replaying the records the machine emitted
// (through msgpack, as a journal stores them) into a fresh machine, yields
// the same job table; so does restoring its Snapshot. The restored
// machine then accepts the same inputs as the original.
func TestRestoreReproducesTheTable(t *testing.T) {
	policies := []gang.Policy{gang.FCFS, gang.EASY, gang.Conservative, gang.PriorityBF}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := ctl.Config{MaxColumns: 12, MPL: 1 + rng.IntN(3), Policy: policies[rng.IntN(len(policies))],
			History: 1 + rng.IntN(6), ReconnectGrace: time.Duration(1+rng.IntN(30)) * time.Second}
		cfg.Alternates = cfg.MPL > 1 && rng.IntN(2) == 0
		m, err := ctl.New(cfg, origin)
		if err != nil {
			t.Fatal(err)
		}
		journal := roundTrip(t, m)
		now := origin
		for step := range 60 + rng.IntN(60) {
			now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
			m.Tick(now)
			randomInput(rng, m)
			m.Tick(now)
			journal = append(journal, roundTrip(t, m)...)
			if step%17 == 16 { // a restart midway; it carries on from the restored machine
				r, err := ctl.Restore(cfg, journal, now)
				if err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				if want, got := table(m, true), table(r, true); want != got {
					t.Fatalf("seed %d step %d: restored table\n%s\nwant\n%s", seed, step, got, want)
				}
				m = r
				journal = append(journal, roundTrip(t, m)...)
			}
		}
		for name, records := range map[string][]ctl.Record{"journal": journal, "snapshot": m.Snapshot()} {
			r, err := ctl.Restore(cfg, records, now)
			if err != nil {
				t.Fatalf("seed %d: restore from the %s: %v", seed, name, err)
			}
			if want, got := table(m, true), table(r, true); want != got {
				t.Fatalf("seed %d: table restored from the %s:\n%s\nwant\n%s", seed, name, got, want)
			}
			if _, err := r.Submit(api.JobSpec{Command: []string{"x"}, Processors: 1, TimeLimit: api.Duration{D: time.Second}}); err != nil && r.Online() > 0 {
				t.Fatalf("seed %d: the restored machine refuses a job: %v", seed, err)
			}
		}
	}
}

// roundTrip takes a machine's Ready, acknowledges it, and returns its
// records as a journal would give them back.
func roundTrip(t *testing.T, m *ctl.Machine) []ctl.Record {
	rd := m.Ready()
	m.Advance()
	b, err := msgpack.Marshal(rd.Records)
	if err != nil {
		t.Fatal(err)
	}
	var out []ctl.Record
	if err := msgpack.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

var agentNames = []string{"a", "b", "c", "d"}

// randomInput feeds the machine one input drawn from everything the shell
// may deliver, plausible or stale.
func randomInput(rng *rand.Rand, m *ctl.Machine) {
	jobs := m.Jobs(true)
	pick := func() (ctl.Job, bool) {
		if len(jobs) == 0 {
			return ctl.Job{}, false
		}
		return jobs[rng.IntN(len(jobs))], true
	}
	name := agentNames[rng.IntN(len(agentNames))]
	switch rng.IntN(10) {
	case 0, 1, 2:
		spec := api.JobSpec{Command: []string{"x"}, Processors: 1 + rng.IntN(6), TimeLimit: api.Duration{D: time.Duration(1+rng.IntN(20)) * time.Second}}
		if rng.IntN(3) == 0 {
			spec.Overrun = "extend"
		}
		_, _ = m.Submit(spec)
	case 3:
		if j, ok := pick(); ok {
			_ = m.Cancel(j.ID)
		}
	case 4:
		report := ctl.AgentReport{Name: name, CPUs: 3}
		for _, j := range jobs { // what it runs, with some lost and some strangers
			for _, r := range j.Ranks {
				if r.Node == name && !r.Exited && rng.IntN(5) > 0 {
					report.Ranks = append(report.Ranks, ctl.LiveRank{Job: j.ID, Rank: r.Rank, PID: 1000 + rng.IntN(1000)})
				} else if r.Node == name && !r.Exited && rng.IntN(2) == 0 {
					report.Exits = append(report.Exits, ctl.RankExit{Job: j.ID, Rank: r.Rank, Code: rng.IntN(2)})
				}
			}
		}
		if rng.IntN(4) == 0 {
			report.Ranks = append(report.Ranks, ctl.LiveRank{Job: 999, Rank: 0, PID: 5})
		}
		_ = m.AgentUp(report)
	case 5:
		m.AgentDown(name)
	case 6:
		if rng.IntN(4) == 0 {
			m.AgentGone(name, "left")
		}
	default:
		if j, ok := pick(); ok && len(j.Ranks) > 0 {
			r := j.Ranks[rng.IntN(len(j.Ranks))]
			x := ctl.RankExit{Job: j.ID, Rank: r.Rank, Node: r.Node, PID: 1 + rng.IntN(100)}
			if rng.IntN(5) == 0 {
				x.Code = 1
			}
			if rng.IntN(10) == 0 {
				x.Node = fmt.Sprint("stale-", x.Node)
			}
			m.RankExit(x)
		}
	}
}

// The history forgets the job that ended first, not the one submitted
// first, and a machine restored from a snapshot forgets the same one.
func TestSnapshotKeepsTheHistoryOrder(t *testing.T) {
	cfg := ctl.Config{MaxColumns: 4, MPL: 1, Policy: gang.FCFS, History: 2}
	m, err := ctl.New(cfg, origin)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AgentUp(ctl.AgentReport{Name: "a", CPUs: 4}); err != nil {
		t.Fatal(err)
	}
	spec := api.JobSpec{Command: []string{"x"}, Processors: 1, TimeLimit: api.Duration{D: time.Hour}}
	for range 4 {
		if _, err := m.Submit(spec); err != nil {
			t.Fatal(err)
		}
	}
	m.Tick(origin)
	end := func(m *ctl.Machine, id int64) {
		if !m.RankExit(ctl.RankExit{Job: id, Rank: 0, Node: "a"}) {
			t.Fatalf("exit of job %d ignored", id)
		}
	}
	end(m, 2)
	end(m, 1)
	r, err := ctl.Restore(cfg, m.Snapshot(), origin)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AgentUp(ctl.AgentReport{Name: "a", CPUs: 4, Ranks: []ctl.LiveRank{{Job: 3, Rank: 0, PID: 3}, {Job: 4, Rank: 0, PID: 4}}}); err != nil {
		t.Fatal(err)
	}
	end(m, 3)
	end(r, 3)
	for name, mm := range map[string]*ctl.Machine{"original": m, "restored": r} {
		var ids []int64
		for _, j := range mm.Jobs(true) {
			ids = append(ids, j.ID)
		}
		if fmt.Sprint(ids) != "[1 3 4]" {
			t.Errorf("%s machine keeps jobs %v, want [1 3 4] (job 2 ended first)", name, ids)
		}
	}
}
