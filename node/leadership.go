package node

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/node/journal"
	"github.com/cosched/cosched/strobe"
)

// journalDir is where a controller-eligible agent keeps its journal.
func journalDir(stateDir string) string { return filepath.Join(stateDir, "journal") }

// openGroup opens the journal of a controller-eligible agent. A lone
// controller (Controllers 1) returns once it leads with its records
// restored; a controller of several waits for gossip to form the group.
func (a *Agent) openGroup(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(a.cfg.RaftPort)))
	if err != nil {
		return fmt.Errorf("node: controller journal listener: %w", err)
	}
	g, err := openControlGroup(ctx, controlGroupConfig{
		Name:      a.cfg.Name,
		Dir:       journalDir(a.cfg.StateDir),
		Listener:  ln,
		Advertise: advertised(ln.Addr().String(), a.cfg.Advertise),
		Expect:    max(a.cfg.Controllers, 1),
		Compact:   compactRecords(machineConfig(a.controllerConfig())),
		Log:       a.log.Named("journal"),
	})
	if err != nil {
		return err
	}
	a.group = g
	return nil
}

// controllerConfig is the configuration of the controller this agent runs
// while it leads (its journal: Config.Journal, else the group's).
func (a *Agent) controllerConfig() ControllerConfig {
	cfg := a.cfg
	return ControllerConfig{Name: cfg.Name, Mode: cfg.Mode, Slice: cfg.Slice, MPL: cfg.MPL, Policy: cfg.Policy, Backfill: cfg.Backfill,
		Bandwidth: cfg.Bandwidth, MaxColumns: cfg.MaxColumns, Priority: cfg.Priority, KeepProcessor: cfg.KeepProcessors, MPI: cfg.MPI, ReconnectGrace: cfg.ControllerGrace,
		Journal: cfg.Journal, Log: a.log, auth: a.ctlAuth}
}

// leads reports whether this agent's controller should run: it leads the
// controllers' group, or it is the only controller (Config.Journal).
func (a *Agent) leads() bool {
	if a.group == nil {
		return a.cfg.Controller
	}
	return a.group.Journal().IsLeader()
}

// controller is the controller this agent runs now: nil unless it leads.
func (a *Agent) controller() *Controller {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ctrl
}

// lead runs the controller while this agent leads the controllers' group
// and stops it when leadership moves (or ctx ends). Only the leader runs the
// scheduler, the slice clock and the API's writes; a new leader rebuilds
// the job table from the journal, re-registers the agents (they report the
// ranks they kept) and resumes the strobes.
func (a *Agent) lead(ctx context.Context) {
	var run *controllerRun
	halt := func() {
		if run == nil {
			return
		}
		run.stop()
		<-run.done
		run = nil
		a.mu.Lock()
		a.ctrl = nil
		a.mu.Unlock()
		if ctx.Err() == nil { // shutting down: the agent leaves the cluster anyway
			a.publishLeads(0)
		}
	}
	defer halt()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		leading := a.leads()
		switch {
		case leading && run == nil:
			var err error
			if run, err = a.startController(ctx); err != nil {
				a.log.Error("controller", zap.Error(err))
				retry.Reset(time.Second)
				break
			}
			term := uint64(1) // a controller with a journal of its own leads alone
			if st, ok := a.journalStats(); ok {
				term = st.Term
				a.log.Info("leading the controllers", zap.Uint64("term", st.Term), zap.Uint64("failovers", st.Failovers))
			}
			a.publishLeads(term)
		case !leading && run != nil:
			a.log.Info("no longer leading the controllers", zap.String("leader", a.leaderName()))
			halt()
		}
		var stopped <-chan struct{}
		if run != nil {
			stopped = run.done
		}
		var changed <-chan struct{}
		if a.group != nil {
			changed = a.group.Journal().LeaderChanged()
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-stopped:
			// The controller stopped while this agent still leads (its
			// journal failed): start another after a pause.
			halt()
			retry.Reset(time.Second)
		case <-retry.C:
		}
	}
}

// controllerRun is one term's controller.
type controllerRun struct {
	stop context.CancelFunc
	done chan struct{} // closed when its Run has returned
}

// startController builds a controller over the journal, starts its loop and
// introduces it to the cluster's members.
func (a *Agent) startController(ctx context.Context) (*controllerRun, error) {
	cc := a.controllerConfig()
	if a.group != nil {
		cc.Journal = raftJournal{g: a.group, firstID: a.cfg.FirstJobID}
	}
	c, err := NewController(cc, a.newSender(), uint64(time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	run := &controllerRun{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(run.done)
		if err := c.Run(cctx); err != nil && cctx.Err() == nil {
			a.log.Error("controller stopped", zap.Error(err))
		}
	}()
	a.mu.Lock()
	a.ctrl = c
	ml := a.ml
	a.mu.Unlock()
	for _, m := range ml.Members() {
		if m.CPUs > 0 { // an agent without processors gets no orders
			c.MemberJoined(m)
		}
	}
	return run, nil
}

func (a *Agent) newSender() *strobe.Sender {
	if !a.cfg.Mode.TimeShared() {
		return nil
	}
	s := strobe.NewSender(a.udp, uint64(time.Now().UnixNano()), a.log)
	s.SetFanout(a.cfg.StrobeFanout)
	s.SetMulticast(a.cfg.StrobeMulticast)
	s.SetAuth(a.strobeAuth)
	return s
}

// publishLeads tells the cluster, through this agent's gossip metadata,
// whether it leads (the term) or not (0).
func (a *Agent) publishLeads(term uint64) {
	a.mu.Lock()
	a.meta.Leads = term
	meta := a.meta
	a.mu.Unlock()
	if a.ml == nil {
		return
	}
	if err := a.ml.UpdateMeta(meta, 2*time.Second); err != nil {
		a.log.Warn("publishing leadership", zap.Error(err))
	}
}

// leaderAPI is the API address of the agent whose controller leads ("" if
// none is known).
func (a *Agent) leaderAPI() string { return a.leaderMeta().APIAddr }

// leaderName is the name of the agent whose controller leads ("" if none
// is known).
func (a *Agent) leaderName() string { return a.leaderMeta().Name }

// leaderMeta is the gossip metadata of the agent whose controller leads.
// A controller-eligible agent asks its journal; the others take the member
// that claims the highest term.
func (a *Agent) leaderMeta() member.Meta {
	a.mu.Lock()
	ml := a.ml
	a.mu.Unlock()
	if ml == nil {
		return member.Meta{}
	}
	members := ml.Members()
	if a.group != nil {
		if id := a.group.Journal().Leader().ID; id != "" {
			for _, m := range members {
				if m.Name == id {
					return m
				}
			}
		}
	}
	var best member.Meta
	for _, m := range members {
		if m.Leads > best.Leads {
			best = m
		}
	}
	return best
}

// eligible lists the controller-eligible members gossip shows.
func eligible(members []member.Meta) []Eligible {
	var out []Eligible
	for _, m := range members {
		if m.Controller && m.RaftAddr != "" {
			out = append(out, Eligible{Name: m.Name, RaftAddr: m.RaftAddr})
		}
	}
	return out
}

// journalStats is the journal's state, false on an agent without one.
func (a *Agent) journalStats() (journal.Stats, bool) {
	if a.group == nil {
		return journal.Stats{}, false
	}
	return a.group.Journal().Stats(), true
}
