package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/node/agentctl"
	"github.com/cosched/cosched/node/rank"
	"github.com/cosched/cosched/sharing"
)

// maxExitText bounds the text of an exit report (a spawn error may quote
// long paths), so that a welcome's exits stay bounded.
const maxExitText = 512

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// The machine's bounds (node/agentctl), by their names here.
const (
	maxWelcomeExits = agentctl.MaxWelcomeExits
	maxLaunched     = agentctl.MaxLaunched
)

// serveControl accepts the controller's control connections. A new
// connection replaces the previous one (a restarted controller).
func (a *Agent) serveControl(ctx context.Context) {
	for {
		conn, err := a.ctlLn.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				a.log.Error("control accept", zap.Error(err))
			}
			return
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.handleControl(ctx, conn)
		}()
	}
}

func (a *Agent) handleControl(ctx context.Context, raw net.Conn) {
	defer raw.Close()
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	log := a.log.With(zap.String("peer", raw.RemoteAddr().String()))
	conn, err := a.ctlAuth.server(ctx, raw, log)
	if err != nil {
		return // counted and logged (rate-limited)
	}
	defer conn.Close()
	r := frame.NewReader(conn, maxControlFrame)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	t, body, err := r.Read()
	var h hello
	if err == nil && t != msgHello {
		err = errors.New("first message is not a hello")
	}
	if err == nil {
		err = frame.Decode(body, &h)
	}
	if err != nil {
		log.Warn("control handshake failed; connection closed", zap.Error(err))
		return
	}
	// From here on rank exits go to this connection, after the welcome.
	exits, gen := a.greet(conn)
	defer a.clearController(gen)
	conn.SetReadDeadline(time.Time{}) // the link's writer sets its own
	log.Info("controller connected", zap.String("controller", h.Controller), zap.String("mode", h.Mode), zap.Int("exits reported", exits))
	mode := sharing.Mode(h.Mode)
	a.sw.configure(mode, h.MPL)
	if mode == sharing.BCS {
		a.relay.SetDelivery(relay.Buffered, time.Duration(h.Slice), h.Bandwidth)
	} else {
		a.relay.SetDelivery(relay.Immediate, 0, 0)
	}
	a.mu.Lock()
	a.ctlName = h.Controller // the controller agent it serves: its leaving ends the link
	a.mu.Unlock()
	a.noteControllerGrace(time.Duration(h.Grace))
	for {
		t, body, err := r.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				log.Warn("control connection closed", zap.Error(err))
			}
			return
		}
		switch t {
		case msgLaunch:
			var l launch
			if err := frame.Decode(body, &l); err != nil {
				log.Warn("malformed launch; dropped", zap.Error(err))
				continue
			}
			switch v := a.takeLaunch(l, gen); v {
			case agentctl.Stale:
				// Read after a newer connection's welcome, which said the
				// agent never got it: that controller sends it again.
				log.Info("launch from a replaced control connection; dropped", zap.Int64("job", l.Job))
				continue
			case agentctl.Duplicate:
				log.Warn("launch of a job this agent has already; dropped (its ranks run once)", zap.Int64("job", l.Job))
				continue
			}
			a.launch(l)
		case msgKill:
			var k kill
			if err := frame.Decode(body, &k); err != nil {
				log.Warn("malformed kill; dropped", zap.Error(err))
				continue
			}
			a.kill(k.Job, k.Reason)
		case msgAlternate:
			var al alternate
			if err := frame.Decode(body, &al); err != nil {
				log.Warn("malformed alternate; dropped", zap.Error(err))
				continue
			}
			if !a.currentWelcome(gen) {
				// Read after a newer connection's welcome: that
				// controller sends every row again, and a stale one
				// must not undo its word.
				log.Info("alternate from a replaced control connection; dropped", zap.Int64("job", al.Job))
				continue
			}
			a.sw.setRow(al.Job, al.Row, al.On)
		case msgPMIBarrierOut:
			var b pmiBarrier
			if err := frame.Decode(body, &b); err != nil {
				log.Warn("malformed PMI barrier; dropped", zap.Error(err))
				continue
			}
			a.pmiBarrierOut(b)
		default:
			log.Warn("unexpected control message; dropped", zap.Uint8("type", uint8(t)))
		}
	}
}

// launch starts a job's ranks that live here.
func (a *Agent) launch(l launch) {
	a.launchMu.Lock()
	defer a.launchMu.Unlock()
	if a.stopped {
		// Read as the agent stopped: the controller learns of the
		// agent's end and deals with the job as with its other ranks here.
		a.log.Info("launch while the agent stops; not started", zap.Int64("job", l.Job))
		return
	}
	dir := filepath.Join(a.cfg.StateDir, "jobs", strconv.FormatInt(l.Job, 10))
	user, err := runAs(l.Owner, l.Dir)
	if err != nil {
		a.log.Warn("job refused", zap.Int64("job", l.Job), zap.Error(err))
		for _, r := range l.Ranks {
			a.report(rankExit{Job: l.Job, Rank: r.Rank, Node: a.cfg.Name, Code: 127, Err: a.cfg.Name + ": " + err.Error()})
		}
		return
	}
	if why := singletonMPI(l, user.dir); why != "" {
		a.log.Warn("job refused", zap.Int64("job", l.Job), zap.String("reason", why))
		for _, r := range l.Ranks {
			a.report(rankExit{Job: l.Job, Rank: r.Rank, Node: a.cfg.Name, Code: 127, Err: why})
		}
		return
	}
	env := append(append(user.env, l.Env...), "COSCHED_NODE="+a.cfg.Name, "COSCHED_RELAY="+a.relay.SocketPath())
	if a.cfg.KeepRanks {
		// The relay comes back with the agent: comm ranks wait for it
		// instead of failing (docs/runtime.md, "Relay restarts").
		env = append(env, "COSCHED_RELAY_GRACE="+a.relayGrace().String())
	}
	if l.MPI == api.MPICosched {
		lib, err := a.mpiLibEnv(env)
		if err != nil {
			// Refused at once, with where the agent looked: no rank
			// starts, and the job fails with the reason.
			a.log.Warn("job refused", zap.Int64("job", l.Job), zap.Error(err))
			for _, r := range l.Ranks {
				a.report(rankExit{Job: l.Job, Rank: r.Rank, Node: a.cfg.Name, Code: 127, Err: truncate(err.Error(), maxExitText)})
			}
			return
		}
		env = append(env, lib)
		a.mu.Lock()
		a.mpiJobs[l.Job] = true
		a.mu.Unlock()
	}
	var pmixEnv map[int][]string
	if l.MPI == api.MPIPMIx {
		var err error
		if pmixEnv, err = a.pmixStart(l, user.cred, dir); err != nil {
			// Refused at once, with the reason: no rank starts.
			a.log.Warn("job refused", zap.Int64("job", l.Job), zap.Error(err))
			for _, r := range l.Ranks {
				a.report(rankExit{Job: l.Job, Rank: r.Rank, Node: a.cfg.Name, Code: 127, Err: truncate(err.Error(), maxExitText)})
			}
			return
		}
	}
	argv := l.Argv
	if l.Bench != nil {
		argv = a.cfg.BenchRank
		env = append(env, bench.EnvJob+"="+l.Bench.Encode())
	}
	// Register before starting, so a strobe that comes while ranks start
	// already knows the job, and the relay knows it before a rank
	// connects; ranks start stopped when rows rotate.
	if len(l.Nodes) > 0 {
		if err := a.relay.AddJobAs(l.Job, l.Nodes, user.uid()); err != nil {
			a.log.Warn("relay", zap.Error(err))
		}
		a.setHeartbeatPeers()
	}
	shared := a.sw.isShared()
	slots := map[int]int{}
	for _, r := range l.Ranks {
		slots[r.Rank] = r.Slot
	}
	if err := a.saveLaunch(l); err != nil {
		a.log.Error("launch not recorded: its ranks would not be taken back after a restart", zap.Int64("job", l.Job), zap.Error(err))
	}
	cg := a.jobCgroup(l) // before the switcher may freeze it
	a.sw.add(l.Job, slots)
	if l.MPI == api.MPIPMI1 {
		a.pmi.AddJob(l.Job, l.Nodes, a.cfg.Name)
	}
	for _, r := range l.Ranks {
		cpu := -1
		if r.Slot >= 0 && r.Slot < len(a.cfg.CPUs) { // a malformed slot pins nothing
			cpu = a.cfg.CPUs[r.Slot]
		}
		if r.Rank < 0 || r.Rank >= l.Size {
			// A malformed launch: not started, its exit reported here.
			a.log.Warn("rank out of the job's range; not started", zap.Int64("job", l.Job), zap.Int("rank", r.Rank), zap.Int("size", l.Size))
			a.sw.rankExited(l.Job, r.Rank)
			a.report(rankExit{Job: l.Job, Rank: r.Rank, Node: a.cfg.Name, Code: rank.ShimExitCode, Err: fmt.Sprintf("rank %d of a job of %d", r.Rank, l.Size)})
			continue
		}
		spec := rank.Spec{Job: l.Job, Rank: r.Rank, Size: l.Size, Argv: argv, Env: slices.Clone(env), LogDir: dir, CPU: cpu, Stopped: shared, Cgroup: cg,
			Credential: user.cred, Dir: user.dir}
		spec.Env = append(spec.Env, pmixEnv[r.Rank]...)
		pmiFile, err := a.rankLayout(l, &spec)
		if err != nil {
			// Not started: its exit is reported here, as the manager would.
			a.log.Warn("PMI connection not opened", zap.Int64("job", l.Job), zap.Int("rank", r.Rank), zap.Error(err))
			a.sw.rankExited(l.Job, r.Rank)
			a.report(rankExit{Job: l.Job, Rank: r.Rank, Node: a.cfg.Name, Code: rank.ShimExitCode, Err: err.Error()})
			continue
		}
		pid, err := a.ranks.Start(spec)
		if pmiFile != nil {
			pmiFile.Close() // the rank has its copy
		}
		if err == nil {
			a.rankStarted(l.Job, r.Rank, pid)
		}
		if err != nil {
			// The manager reports the failure as the rank's Exit.
			a.log.Warn("rank did not start", zap.Int64("job", l.Job), zap.Int("rank", r.Rank), zap.Error(err))
		}
	}
	for _, row := range l.Rows {
		a.sw.setRow(l.Job, row, true)
	}
}

// kill ends a job's ranks here, those of a launch under way included
// (launchMu).
func (a *Agent) kill(job int64, reason string) {
	a.launchMu.Lock()
	defer a.launchMu.Unlock()
	a.sw.remove(job)
	a.relay.RemoveJob(job)
	a.killCgroup(job) // first: it samples the job's processes before they go
	a.setHeartbeatPeers()
	if err := a.ranks.Kill(job); err != nil {
		a.log.Debug("kill", zap.Int64("job", job), zap.Error(err))
	}
	a.log.Info("job killed", zap.Int64("job", job), zap.String("reason", reason))
}

// forwardExits reports every rank's end to the controller.
func (a *Agent) forwardExits() {
	for {
		var e rank.Exit
		select {
		case <-a.detached:
			return // the next life reports the rest
		case x, ok := <-a.ranks.Exits():
			if !ok {
				return
			}
			e = x
		}
		m := rankExit{Job: e.Job, Rank: e.Rank, Node: a.cfg.Name, PID: e.PID, Code: e.Code, Signal: e.Signal,
			CPUTime: int64(e.CPUTime), MaxRSS: e.MaxRSS}
		if e.Err != nil {
			m.Err = truncate(e.Err.Error(), maxExitText)
		}
		m.Failure, m.Reason = a.relayFailure(m)
		if m.Failure == "" {
			m.Failure = a.pmi.Failure(e.Job, e.Rank, m.Code == 0 && m.Signal == "" && m.Err == "")
		}
		if m.Failure == "" {
			m.Failure = a.pmix.Failure(e.Job, e.Rank, m.Code == 0 && m.Signal == "" && m.Err == "")
		}
		a.mu.Lock()
		if s, ok := a.stats[rankKey{e.Job, e.Rank}]; ok {
			m.Stats = &s
			delete(a.stats, rankKey{e.Job, e.Rank})
		}
		a.mu.Unlock()
		a.sw.rankExited(e.Job, e.Rank)
		// A rank that exits while its job's launch here is under way
		// (true, a crash in main) is not the last: its siblings not yet
		// started are in no count, and removing the cgroup would kill
		// those being started into it. The launch ends first.
		a.launchMu.Lock()
		last := len(a.ranks.Ranks(e.Job)) == 0
		if last {
			a.sw.remove(e.Job)
			if a.cfg.KeepRanks {
				os.Remove(launchFile(a.cfg, e.Job))
			}
			a.relay.FinishJob(e.Job)
			a.pmiJobGone(e.Job)
			a.mu.Lock()
			delete(a.mpiJobs, e.Job)
			a.mu.Unlock()
			a.setHeartbeatPeers()
		}
		a.cgroupExit(&m, last)
		a.launchMu.Unlock()
		a.report(m)
	}
}

// takeLaunch records a launch read from the connection of welcome gen
// before the agent starts its ranks: the job among those this life got,
// its ranks as unreported. Only a Taken launch is started: a Stale one
// was read after a newer welcome, which did not list it, so the
// controller that got it sends the launch again if it still wants it; a
// Duplicate is of a job this life has already.
func (a *Agent) takeLaunch(l launch, gen uint64) agentctl.Verdict {
	ranks := make([]int, len(l.Ranks))
	for i, r := range l.Ranks {
		ranks[i] = r.Rank
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.actl.Launch(gen, l.Job, ranks)
}

// currentWelcome reports whether gen is the latest welcome's number: a
// message read on an older connection is stale.
func (a *Agent) currentWelcome(gen uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.actl.Current(gen)
}

// rankStarted records a started rank's pid for the welcomes that list it
// before its exit is reported.
func (a *Agent) rankStarted(job int64, rank, pid int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actl.Started(job, rank, pid)
}

// greet answers a controller's hello on conn with the agent's welcome and
// makes conn the link rank exits go to (the previous one is closed: one
// controller, one connection); the exits recorded since follow. It
// returns the exits the welcome handed over and the welcome's number
// (takeLaunch). The machine decides the welcome's contents
// (agentctl.Machine.Connect) from the ranks the rank manager has live.
//
// The welcome is taken, queued first on the new link and the link
// installed under mu, the lock launches are taken and exits reported
// under: every rank of every launch it got is either listed or has its
// exit in the welcome or after it on conn, whatever happens meanwhile.
// The link's writer sends it (controlLink): a welcome that cannot be
// written closes the link, and its exits go back to pending for the next
// controller.
func (a *Agent) greet(conn net.Conn) (int, uint64) {
	jobs := a.sw.jobIDs()
	var live []agentctl.Rank
	for _, r := range a.ranks.Live() {
		live = append(live, agentctl.Rank{Job: r.Job, Rank: r.Rank, PID: r.PID, Stopped: processStopped(r.PID)})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	gen := a.actl.Connect(live, jobs)
	rd := a.actl.Ready()
	n := rd.Welcome.Handed
	a.applyLocked(rd, conn)
	for _, m := range a.pmiPending {
		a.writePMIBarrierLocked(m)
	}
	return n, gen
}

// stepLocked carries out the effects of the machine's inputs just given
// (with a.mu held) and returns the exits whose kept records may go
// (forget them once a.mu is released).
func (a *Agent) stepLocked(conn net.Conn) []agentctl.Exit {
	rd := a.actl.Ready()
	a.applyLocked(rd, conn)
	return rd.Forget
}

// applyLocked carries out a Ready's messages in its order (with a.mu
// held): links closed, the welcome queued first on its new link (on conn,
// whose writer starts), then rank exits.
func (a *Agent) applyLocked(rd agentctl.Ready, conn net.Conn) {
	for _, id := range rd.Close {
		if a.link != nil && a.link.id == id {
			a.link.close()
			a.link = nil
		}
	}
	if w := rd.Welcome; w != nil {
		l := newControlLink(conn, w.Link)
		a.link = l
		// Written, every exit it carries has reached a controller: the
		// repeated ones too (one whose own frame was never written is
		// forgotten here, not left to the next life).
		l.send(outFrame{typ: msgWelcome, body: a.wireWelcome(w), exits: w.Exits})
		a.goRun(func() { a.writeControl(l) })
	}
	for _, wr := range rd.Writes {
		if a.link != nil && a.link.id == wr.Link {
			a.link.send(outFrame{typ: msgRankExit, body: wr.Exit.Report, exits: []agentctl.Exit{wr.Exit}})
		}
	}
	if rd.LinkChanged {
		a.controllerChanged()
	}
}

// forget lets the records of kept ranks whose exits were written go.
func (a *Agent) forget(exits []agentctl.Exit) {
	for _, x := range exits {
		a.ranks.Forget(x.Job, x.Rank, x.PID)
	}
}

// wireWelcome is the machine's welcome as the protocol carries it.
func (a *Agent) wireWelcome(mw *agentctl.Welcome) welcome {
	w := welcome{Node: a.cfg.Name, Jobs: mw.Jobs, Incarnation: mw.Incarnation, Keeps: mw.Keeps,
		Launched: mw.Launched, LaunchedFloor: mw.LaunchedFloor}
	for _, r := range mw.Ranks {
		w.Ranks = append(w.Ranks, liveRank{Job: r.Job, Rank: r.Rank, PID: r.PID, Stopped: r.Stopped})
	}
	for _, x := range mw.Exits {
		w.Exits = append(w.Exits, x.Report.(rankExit))
	}
	return w
}

// machineExit is a rank exit as the machine carries it.
func machineExit(m rankExit) agentctl.Exit {
	return agentctl.Exit{Job: m.Job, Rank: m.Rank, PID: m.PID, Report: m}
}

// processStopped reports whether a process is stopped (state T in
// /proc/pid/stat).
func processStopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// clearController ends the link of welcome gen, if it is still current:
// its reader stopped.
func (a *Agent) clearController(gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actl.Disconnect(gen)
	a.stepLocked(nil)
}

// controllerChanged wakes watchController (with a.mu held).
func (a *Agent) controllerChanged() {
	select {
	case a.ctlChanged <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// watchController kills the local ranks when no controller has been
// connected for ControllerGrace: until then they stay as they are (the
// current row running, the others stopped) for a controller to adopt.
func (a *Agent) watchController(ctx context.Context) {
	grace := a.cfg.ControllerGrace
	var expiry <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.ctlChanged:
			a.mu.Lock()
			connected := a.actl.Connected()
			a.mu.Unlock()
			switch {
			case connected && timer != nil:
				timer.Stop()
				timer, expiry = nil, nil
			case !connected && timer == nil && grace > 0:
				timer = time.NewTimer(grace)
				expiry = timer.C
				if n := len(a.ranks.Live()); n > 0 {
					a.log.Warn("controller lost: ranks keep running for the grace", zap.Duration("grace", grace), zap.Int("ranks", n))
				}
			}
		case <-expiry:
			timer, expiry = nil, nil
			a.mu.Lock()
			connected := a.actl.Connected()
			a.mu.Unlock()
			if !connected {
				a.killAll(fmt.Sprintf("no controller for %v (controller grace)", grace))
			}
		}
	}
}

// killAll kills every local rank: SIGKILL and SIGCONT to each, so stopped
// ones die too. Their exits are kept for the next controller.
func (a *Agent) killAll(reason string) {
	ids := a.sw.jobIDs()
	for _, r := range a.ranks.Live() {
		if !slices.Contains(ids, r.Job) {
			ids = append(ids, r.Job)
		}
	}
	if len(ids) == 0 {
		return
	}
	a.log.Warn("killing local ranks", zap.String("reason", reason), zap.Int("jobs", len(ids)))
	for _, id := range ids {
		a.kill(id, reason)
	}
}

// report sends a rank's exit to the controller, or keeps it for the next
// one.
func (a *Agent) report(m rankExit) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actl.Exit(machineExit(m))
	a.stepLocked(nil)
}

// controllerGone handles the controller's departure from the cluster:
// without a grace its ranks die at once (nobody schedules them, and no
// rank may be left behind); with one, watchController kills them if no
// controller connects in time.
func (a *Agent) controllerGone(name string) {
	if a.cfg.ControllerGrace == 0 {
		a.killAll("controller " + name + " gone")
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Gossip knows before TCP does (a partition sends no FIN): close the
	// connection, the grace starts now. A controller that is in fact
	// alive dials again.
	a.actl.ControllerGone()
	a.stepLocked(nil)
}

// stateDir creates the agent's state directory.
func stateDir(dir string) error {
	return os.MkdirAll(dir, 0o755)
}
