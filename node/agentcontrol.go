package node

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/node/rank"
)

// maxPendingExits bounds the exit reports an agent keeps while no
// controller is connected.
const maxPendingExits = 10000

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

func (a *Agent) handleControl(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	log := a.log.With(zap.String("peer", conn.RemoteAddr().String()))
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
	if err == nil {
		err = frame.Write(conn, msgWelcome, welcome{Node: a.cfg.Name, Jobs: a.sw.jobIDs()})
	}
	if err != nil {
		log.Warn("control handshake failed; connection closed", zap.Error(err))
		return
	}
	conn.SetDeadline(time.Time{})
	log.Info("controller connected", zap.String("controller", h.Controller), zap.String("mode", h.Mode))
	a.sw.setShared(Mode(h.Mode).TimeShared())
	a.setController(conn)
	defer a.clearController(conn)
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
			a.sw.setRow(al.Job, al.Row, al.On)
		default:
			log.Warn("unexpected control message; dropped", zap.Uint8("type", uint8(t)))
		}
	}
}

// launch starts a job's ranks that live here.
func (a *Agent) launch(l launch) {
	dir := filepath.Join(a.cfg.StateDir, "jobs", strconv.FormatInt(l.Job, 10))
	env := append(append([]string(nil), l.Env...), "COSCHED_NODE="+a.cfg.Name)
	// Register before starting, so a strobe that comes while ranks start
	// already knows the job; ranks start stopped when rows rotate.
	shared := a.sw.isShared()
	a.sw.add(l.Job, nil)
	for _, r := range l.Ranks {
		cpu := -1
		if r.Slot < len(a.cfg.CPUs) {
			cpu = a.cfg.CPUs[r.Slot]
		}
		spec := rank.Spec{Job: l.Job, Rank: r.Rank, Size: l.Size, Argv: l.Argv, Env: env, LogDir: dir, CPU: cpu, Stopped: shared}
		if _, err := a.ranks.Start(spec); err != nil {
			// The manager reports the failure as the rank's Exit.
			a.log.Warn("rank did not start", zap.Int64("job", l.Job), zap.Int("rank", r.Rank), zap.Error(err))
		}
	}
	for _, row := range l.Rows {
		a.sw.setRow(l.Job, row, true)
	}
}

// kill ends a job's ranks here.
func (a *Agent) kill(job int64, reason string) {
	a.sw.remove(job)
	if err := a.ranks.Kill(job); err != nil {
		a.log.Debug("kill", zap.Int64("job", job), zap.Error(err))
	}
	a.log.Info("job killed", zap.Int64("job", job), zap.String("reason", reason))
}

// forwardExits reports every rank's end to the controller.
func (a *Agent) forwardExits() {
	for e := range a.ranks.Exits() {
		m := rankExit{Job: e.Job, Rank: e.Rank, Node: a.cfg.Name, PID: e.PID, Code: e.Code, Signal: e.Signal,
			CPUTime: int64(e.CPUTime), MaxRSS: e.MaxRSS}
		if e.Err != nil {
			m.Err = e.Err.Error()
		}
		if len(a.ranks.Ranks(e.Job)) == 0 {
			a.sw.remove(e.Job)
		}
		a.report(m)
	}
}

// setController makes conn the connection rank exits go to. A newer
// connection replaces an older one, which is closed: one controller, one
// connection.
func (a *Agent) setController(conn net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil && a.conn != conn {
		a.conn.Close()
	}
	a.conn = conn
	pending := a.pending
	a.pending = nil
	for _, m := range pending {
		a.writeExitLocked(m)
	}
}

func (a *Agent) clearController(conn net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == conn {
		a.conn = nil
	}
}

func (a *Agent) report(m rankExit) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writeExitLocked(m)
}

func (a *Agent) writeExitLocked(m rankExit) {
	if a.conn != nil {
		a.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if err := frame.Write(a.conn, msgRankExit, m); err == nil {
			return
		}
		a.conn.Close() // the reader sees it and clears it
		a.conn = nil
	}
	if len(a.pending) < maxPendingExits {
		a.pending = append(a.pending, m)
	}
}

// controllerGone kills every local rank: without a controller nobody
// schedules them, and no rank may be left behind.
func (a *Agent) controllerGone(name string) {
	ids := a.sw.jobIDs()
	if len(ids) == 0 {
		return
	}
	a.log.Warn("controller gone: killing local ranks", zap.String("controller", name), zap.Int("jobs", len(ids)))
	for _, id := range ids {
		a.kill(id, "controller "+name+" gone")
	}
}

// stateDir creates the agent's state directory.
func stateDir(dir string) error {
	return os.MkdirAll(dir, 0o755)
}
