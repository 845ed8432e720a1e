package node

import (
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/jobcg"
	"github.com/cosched/cosched/node/rank"
)

// suspender picks how the switcher stops and continues jobs: the rank
// manager's signals, or (--suspend freezer, with cgroups) the jobs'
// cgroup freezers.
func (a *Agent) suspender() signaller {
	if a.cfg.Suspend == api.SuspendFreezer && a.cg.Mode() != jobcg.ModeNone {
		return &freezer{ranks: a.ranks, cg: a.cg}
	}
	return a.ranks
}

// freezer suspends a job by freezing its cgroup: its processes stop
// without a signal, so neither they nor their parents (waitpid's
// WUNTRACED, ptrace, a runtime's SIGCONT handler) can tell. A rank still
// in its start-up shim, which stops itself before exec'ing the program,
// is released by one SIGCONT the first time its job is thawed
// (rank.Manager.Release); the program itself never sees one.
//
// BCS's per-rank control (slot reuse) keeps signals: a cgroup holds a
// whole job, not one rank.
type freezer struct {
	ranks *rank.Manager
	cg    *jobcg.Tree
}

func (f *freezer) Stop(job int64) error {
	if j := f.cg.Job(job); j != nil {
		return j.Freeze()
	}
	return f.ranks.Stop(job)
}

func (f *freezer) Cont(job int64) error {
	j := f.cg.Job(job)
	if j == nil {
		return f.ranks.Cont(job)
	}
	if err := j.Thaw(); err != nil {
		return err
	}
	return f.ranks.Release(job)
}

func (f *freezer) StopRank(job int64, rank int) error { return f.ranks.StopRank(job, rank) }
func (f *freezer) ContRank(job int64, rank int) error { return f.ranks.ContRank(job, rank) }

// suspendStatus is the suspension in effect, for `nodes --stats`.
func (a *Agent) suspendStatus() string {
	if _, ok := a.sw.ranks.(*freezer); ok {
		return api.SuspendFreezer
	}
	return api.SuspendSignal
}
