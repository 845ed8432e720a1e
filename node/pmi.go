package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/ctl"
	"github.com/cosched/cosched/node/rank"
	"github.com/cosched/cosched/pmi"
	"github.com/cosched/cosched/pmix"
)

// pmiBarrier carries a PMI barrier between an agent and the controller:
// agent → controller when all its ranks of the job are in it
// (msgPMIBarrier), controller → every agent of the job when all agents are
// (msgPMIBarrierOut), with the puts made since the previous barrier.
type pmiBarrier struct {
	Job   int64             `msgpack:"job"`
	Epoch uint64            `msgpack:"epoch"`
	Puts  map[string]string `msgpack:"puts"`
	// Err, from the controller, means the barrier cannot complete: the
	// job ends with it.
	Err string `msgpack:"err,omitempty"`
}

// rankLayout sets a rank's environment for its node-local rank (every
// job) and, for an MPI job, opens its PMI connection: the file goes to the
// rank as descriptor pmi.FD; the caller closes it after the start.
func (a *Agent) rankLayout(l launch, spec *rank.Spec) (*os.File, error) {
	if len(l.Nodes) > spec.Rank {
		local, per := pmi.LocalRanks(l.Nodes)
		spec.Env = append(spec.Env, "COSCHED_LOCAL_RANK="+strconv.Itoa(local[spec.Rank]), "COSCHED_LOCAL_SIZE="+strconv.Itoa(per[spec.Rank]))
	}
	if l.MPI != api.MPIPMI1 {
		return nil, nil
	}
	if len(l.Nodes) != l.Size {
		return nil, fmt.Errorf("pmi: launch without the job's node list")
	}
	f, err := a.pmi.Rank(l.Job, spec.Rank, filepath.Join(spec.LogDir, fmt.Sprintf("rank-%d.err", spec.Rank)))
	if err != nil {
		return nil, err
	}
	spec.Env = append(spec.Env, pmi.Env(l.Nodes, spec.Rank)...)
	if a.cfg.KeepRanks {
		spec.Env = append(spec.Env, a.pmiResumeEnv(l.Job, spec.Rank))
	}
	spec.ExtraFiles = []*os.File{f}
	return f, nil
}

// pmiBarrierIn sends a job's local barrier to the controller. It stays
// pending until the barrier ends: a controller that connects meanwhile
// (a restart, an outage ridden out) gets it again (greet).
func (a *Agent) pmiBarrierIn(job int64, b pmi.Barrier) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pmiPending == nil {
		a.pmiPending = map[int64]pmiBarrier{}
	}
	m := pmiBarrier{Job: job, Epoch: b.Epoch, Puts: b.Puts}
	a.pmiPending[job] = m
	a.writePMIBarrierLocked(m)
}

// writePMIBarrierLocked queues a barrier for the controller's link, if
// there is one (with a.mu held); it stays pending until its end comes.
func (a *Agent) writePMIBarrierLocked(m pmiBarrier) {
	if a.link != nil {
		a.link.send(outFrame{typ: msgPMIBarrier, body: m})
	}
}

// pmiBarrierOut ends a job's pending barrier (from the controller). An
// end that comes twice (the agent sent its part again to a controller
// that had already answered on a connection since lost) counts once.
func (a *Agent) pmiBarrierOut(b pmiBarrier) {
	a.mu.Lock()
	p, pending := a.pmiPending[b.Job]
	pending = pending && p.Epoch == b.Epoch
	if pending {
		delete(a.pmiPending, b.Job)
	}
	a.mu.Unlock()
	if b.Err != "" {
		a.pmi.Fail(b.Job, b.Err)
		a.pmix.Fail(b.Job, b.Err)
		return
	}
	if !pending {
		return
	}
	if a.pmix.Has(b.Job) {
		a.goRun(func() { a.pmix.BarrierDone(b.Job, pmi.Barrier{Epoch: b.Epoch, Puts: b.Puts}) })
		return
	}
	// Replies to ranks have write deadlines; off the control loop.
	a.goRun(func() { a.pmi.BarrierDone(b.Job, pmi.Barrier{Epoch: b.Epoch, Puts: b.Puts}) })
}

// pmiJobGone forgets a job whose last local rank ended.
func (a *Agent) pmiJobGone(job int64) {
	a.pmi.RemoveJob(job)
	if a.cfg.KeepRanks {
		os.Remove(pmiSnapshotFile(a.cfg, job)) // with the launch record
	}
	a.pmix.RemoveJob(job)
	a.mu.Lock()
	delete(a.pmiPending, job)
	a.mu.Unlock()
}

// pmiFail ends a job's local ranks: one aborted or broke the protocol.
// Their exits carry the reason (pmi.Server.Failure) to the controller,
// which ends the job everywhere.
func (a *Agent) pmiFail(job int64, reason string) {
	if err := a.ranks.Kill(job); err != nil {
		a.log.Debug("kill after PMI failure", zap.Int64("job", job), zap.Error(err))
	}
}

// pmiBarrierIn (controller, in its loop) gathers an agent's barrier;
// when every agent of the job is in, the barrier ends on all of them. A
// barrier that cannot complete (an agent in twice, too many bytes) goes
// back as an error: the agents end the job's ranks with the reason.
func (c *Controller) pmiBarrierIn(m *ctl.Machine, node string, b pmiBarrier) {
	j, ok := m.Job(b.Job)
	if !ok || j.State != api.Running || j.Ending != "" {
		return
	}
	if c.pmiGathers == nil {
		c.pmiGathers = map[int64]*pmi.Gather{}
	}
	g := c.pmiGathers[j.ID]
	if g == nil {
		nodes := make([]string, len(j.Ranks))
		for i, r := range j.Ranks {
			nodes[i] = r.Node
		}
		g = pmi.NewGather(nodes)
		c.pmiGathers[j.ID] = g
	}
	out := pmiBarrier{Job: j.ID, Epoch: b.Epoch}
	done, to, err := g.In(node, pmi.Barrier{Epoch: b.Epoch, Puts: b.Puts})
	switch {
	case err != nil:
		out.Err = "PMI: " + err.Error()
		to = g.Nodes()
		delete(c.pmiGathers, j.ID)
	case done == nil:
		return
	default:
		out.Puts = done.Puts
	}
	for _, a := range to {
		if l := c.links[a]; l != nil {
			if err := l.send(msgPMIBarrierOut, out); err != nil {
				c.log.Warn("PMI barrier not sent", zap.String("peer", a), zap.Error(err))
			}
		}
	}
}

// pmixStart starts a --mpi pmix job's helper on this node (package
// pmix): each local rank's PMIx environment, or why the job cannot run
// here (no helper built, the helper failed to start).
func (a *Agent) pmixStart(l launch, cred *syscall.Credential, dir string) (map[int][]string, error) {
	if len(l.Nodes) != l.Size {
		return nil, fmt.Errorf("pmix: launch without the job's node list")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.pmix.AddJob(ctx, pmix.JobConfig{Job: l.Job, Nodes: l.Nodes, Here: a.cfg.Name,
		Helper: filepath.Join(a.mpiLib, pmix.HelperName), Cred: cred, LogDir: dir})
}
