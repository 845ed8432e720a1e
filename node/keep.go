package node

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/node/agentctl"
	"github.com/cosched/cosched/node/rank"
)

// This file lets ranks outlive their agent (Config.KeepRanks): each rank
// runs under a keeper (node/rank), each launch is recorded in the state
// directory, and a restarted agent reattaches the jobs it finds there
// (docs/runtime.md, "Agent restarts").

// keepDir is where the rank manager records its keepers.
func keepDir(cfg Config) string { return filepath.Join(cfg.StateDir, "ranks") }

// launchFile is where a job's launch on this node is recorded.
func launchFile(cfg Config, job int64) string {
	return filepath.Join(cfg.StateDir, "jobs", strconv.FormatInt(job, 10), "launch.msgpack")
}

// saveLaunch records a launch before its ranks start, so that the agent's
// next life can register the job again (relay, switcher, PMI).
func (a *Agent) saveLaunch(l launch) error {
	if !a.cfg.KeepRanks {
		return nil
	}
	b, err := msgpack.Marshal(l)
	if err != nil {
		return err
	}
	path := launchFile(a.cfg, l.Job)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}

// keptLaunches reads what a previous life of the agent left: its kept
// ranks and the launch of each of their jobs. It reads only, and fails
// with an error naming the file on anything it cannot read or that is not
// this agent's: the agent then refuses to start, before it touches any
// process or cgroup.
func keptLaunches(cfg Config) ([]rank.Kept, map[int64]launch, error) {
	if !cfg.KeepRanks {
		if _, err := os.Stat(keepDir(cfg)); err == nil {
			// A previous life kept ranks and this one does not take
			// them: they go, as a killed agent's ranks do.
			if n, err := rank.KillKept(keepDir(cfg), cfg.Name); err != nil {
				return nil, nil, err
			} else if n > 0 {
				cfg.Log.Warn("killed the ranks a previous life kept: this agent runs without --keep-ranks", zap.Int("ranks", n))
			}
		}
		return nil, nil, nil
	}
	kept, err := rank.ReadKept(keepDir(cfg), cfg.Name)
	if err != nil {
		return nil, nil, err
	}
	launches := map[int64]launch{}
	for _, k := range kept {
		if _, ok := launches[k.Job]; ok || !k.Alive {
			continue // an ended rank needs no launch: only its exit is reported
		}
		path := launchFile(cfg, k.Job)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("job %d has kept ranks but its launch record cannot be read: %w", k.Job, err)
		}
		var l launch
		if err := msgpack.Unmarshal(b, &l); err != nil || l.Job != k.Job {
			return nil, nil, fmt.Errorf("launch record %s is corrupt (%v); move the state directory aside", path, err)
		}
		launches[k.Job] = l
	}
	return kept, launches, nil
}

// liveJobs lists the jobs with a live kept rank: their cgroups are adopted,
// not cleaned.
func liveJobs(kept []rank.Kept) []int64 {
	var ids []int64
	for _, k := range kept {
		if k.Alive && !slices.Contains(ids, k.Job) {
			ids = append(ids, k.Job)
		}
	}
	return ids
}

// reattach adopts the kept ranks of a previous life and registers their
// jobs again as their launch did (relay, switcher, PMI), without starting
// anything. Ranks that ended meanwhile have their exits queued; the
// welcome reports the live ones, and the controller's rows follow.
func (a *Agent) reattach(launches map[int64]launch) error {
	kept, err := a.ranks.Adopt()
	if err != nil {
		return err // read once already: a file changed under us
	}
	if err := a.servePMIResume(); err != nil {
		return err
	}
	alive := map[int64]map[int]bool{}
	adopted := make([]agentctl.Rank, len(kept))
	for i, k := range kept {
		adopted[i] = agentctl.Rank{Job: k.Job, Rank: k.Rank, PID: k.PID}
	}
	// Listed in the welcomes until its exit is reported, ended ones too:
	// their exits are queued, and a controller told of neither would call
	// them lost.
	a.mu.Lock()
	a.actl.Adopt(adopted)
	a.mu.Unlock()
	for _, k := range kept {
		if k.Alive {
			if alive[k.Job] == nil {
				alive[k.Job] = map[int]bool{}
			}
			alive[k.Job][k.Rank] = true
		}
	}
	for _, id := range slices.Sorted(func(yield func(int64) bool) {
		for id := range alive {
			if !yield(id) {
				return
			}
		}
	}) {
		l := launches[id]
		slots := map[int]int{}
		for _, r := range l.Ranks {
			if alive[id][r.Rank] {
				slots[r.Rank] = r.Slot
			}
		}
		if len(l.Nodes) > 0 {
			uid := uint32(os.Geteuid())
			if u, err := runAs(l.Owner, l.Dir); err == nil {
				uid = u.uid()
			}
			if err := a.relay.ReattachJob(id, l.Nodes, uid); err != nil {
				a.log.Warn("relay", zap.Error(err))
			}
		}
		if l.MPI == api.MPICosched {
			a.mu.Lock()
			a.mpiJobs[id] = true
			a.mu.Unlock()
		}
		a.sw.add(id, slots)
		if l.MPI == api.MPIPMI1 {
			sn, err := readPMISnapshot(a.cfg, id)
			if err != nil {
				// The ranks' keepers are refused (their numbers of
				// barriers disagree) and the job fails; the others go on.
				a.log.Error("PMI state of a kept job unreadable", zap.Int64("job", id), zap.Error(err))
			}
			a.pmi.RestoreJob(id, l.Nodes, a.cfg.Name, sn)
		}
		for _, row := range l.Rows {
			a.sw.setRow(id, row, true)
		}
		a.log.Info("job reattached: its ranks outlived the agent's previous life", zap.Int64("job", id), zap.Int("ranks", len(slots)))
	}
	return nil
}

// relayGrace is how long a kept rank waits for its relay to come back
// (COSCHED_RELAY_GRACE): as long as the controller waits for the agent,
// and a little more, since the rank counts from when it noticed.
func (a *Agent) relayGrace() time.Duration {
	return cmp.Or(a.controllerGrace(), time.Minute) + 30*time.Second
}

// controllerGrace is how long the controller waits for this agent to come
// back after its connection broke: what the latest controller said in its
// hello, else the agent's own --controller-grace (which operators are told
// to give every agent alike).
func (a *Agent) controllerGrace() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cmp.Or(a.ctlGrace, a.cfg.ControllerGrace)
}

// controllerGraceFile, in the state directory, is the latest controller's
// reconnect grace, for the agent's guard: a dead agent's kept ranks are
// kept as long as the controller waits for the agent, whatever the
// agent's own --controller-grace says.
const controllerGraceFile = "controller-grace"

// noteControllerGrace records the grace a controller's hello gave (0: it
// gave none), in the state directory when the agent keeps its ranks.
func (a *Agent) noteControllerGrace(grace time.Duration) {
	if grace <= 0 {
		return
	}
	a.mu.Lock()
	changed := a.ctlGrace != grace
	a.ctlGrace = grace
	a.mu.Unlock()
	if !changed || !a.cfg.KeepRanks {
		return
	}
	if grace != a.cfg.ControllerGrace {
		a.log.Warn("the controller waits for a lost agent another time than this agent's --controller-grace: should this agent die, its guard keeps its ranks for the controller's time",
			zap.Duration("controller grace", grace), zap.Duration("own grace", a.cfg.ControllerGrace))
	}
	path := filepath.Join(a.cfg.StateDir, controllerGraceFile)
	if err := atomicfile.WriteFile(path, []byte(grace.String()+"\n")); err != nil {
		a.log.Error("recording the controller's grace for the guard", zap.Error(err))
	}
}

// guardGrace is how long the guard of cfg's dead agent waits for its next
// life: the controller's grace its agent recorded, else the agent's own.
func guardGrace(cfg Config) (time.Duration, string) {
	b, err := os.ReadFile(filepath.Join(cfg.StateDir, controllerGraceFile))
	if err == nil {
		if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil && d > 0 {
			return d, "the controller's"
		}
	}
	return cfg.ControllerGrace, "the agent's own"
}

// gossipPortFile remembers, in the state directory, the gossip port an
// agent with --keep-ranks bound to when --bind asked for any (port 0).
const gossipPortFile = "gossip.port"

// joinGossip joins the cluster. An agent that keeps its ranks and was
// given no fixed gossip port binds the one its previous life had, if it is
// free: the others then see the same member at the same address coming
// back with new metadata, rather than a second member of the same name at
// another address, which they refuse until gossip declares the first dead
// (seconds, during which the agent cannot be reached).
func (a *Agent) joinGossip(ctx context.Context, mcfg member.Config) (*member.Membership, error) {
	host, port, err := net.SplitHostPort(a.cfg.Bind)
	reuse := a.cfg.KeepRanks && err == nil && (port == "0" || port == "")
	path := filepath.Join(a.cfg.StateDir, gossipPortFile)
	if reuse {
		if b, err := os.ReadFile(path); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 {
				again := mcfg
				again.Bind = net.JoinHostPort(host, strconv.Itoa(p))
				if ml, err := member.Join(ctx, again); err == nil {
					return ml, nil
				} else {
					a.log.Info("previous gossip port not reusable; binding another", zap.Int("port", p), zap.Error(err))
				}
			}
		}
	}
	ml, err := member.Join(ctx, mcfg)
	if err != nil {
		return nil, err
	}
	if reuse {
		if _, p, err := net.SplitHostPort(ml.Addr()); err == nil {
			if err := atomicfile.WriteFile(path, []byte(p+"\n")); err != nil {
				a.log.Warn("gossip port not recorded", zap.Error(err))
			}
		}
	}
	return ml, nil
}
