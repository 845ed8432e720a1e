package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/sharing"
)

// ControlPeer is the address of the controller's end of the agent's
// control connection ("" without one): tests tell connections apart by it.
func ControlPeer(a *Agent) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.link == nil {
		return ""
	}
	return a.link.conn.RemoteAddr().String()
}

// BreakControl closes the agent's control connection, as a network fault
// would: the agent and the controller both see it end, neither process
// stops. It reports whether there was one.
func BreakControl(a *Agent) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.link == nil {
		return false
	}
	a.link.conn.Close() // not link.close(): the writer and reader find out, as from a fault
	return true
}

// WelcomeRank and ExitReport are what an agent's welcome carries.
type (
	WelcomeRank = liveRank
	ExitReport  = rankExit
)

// Greet opens the agent's control port as a controller would, reads its
// welcome, and closes the connection.
func Greet(a *Agent, mode sharing.Mode, mpl int) ([]WelcomeRank, []ExitReport, error) {
	conn, err := net.Dial("tcp", a.ctlLn.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := frame.Write(conn, msgHello, hello{Controller: "test", Epoch: 1, Mode: string(mode), MPL: mpl}); err != nil {
		return nil, nil, err
	}
	t, body, err := frame.NewReader(conn, maxControlFrame).Read()
	if err != nil {
		return nil, nil, err
	}
	if t != msgWelcome {
		return nil, nil, fmt.Errorf("message type %d, want a welcome", t)
	}
	var w welcome
	if err := frame.Decode(body, &w); err != nil {
		return nil, nil, err
	}
	return w.Ranks, w.Exits, nil
}

// ForgeLaunch opens the agent's control port as a controller would — in
// plain TCP when key is nil, else through a TLS link of key's — says
// hello and asks it to launch argv as the only rank of job. It returns
// nil if the agent answered with a welcome (it took the connection for
// its controller's), else why not.
func ForgeLaunch(a *Agent, key *clusterkey.Key, job int64, argv []string) error {
	raw, err := net.Dial("tcp", a.ctlLn.Addr().String())
	if err != nil {
		return err
	}
	defer raw.Close()
	var conn net.Conn = raw
	if key != nil {
		l, err := key.Link("control")
		if err != nil {
			return err
		}
		if conn, err = l.Client(context.Background(), raw, 5*time.Second); err != nil {
			return err
		}
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := frame.Write(conn, msgHello, hello{Controller: "forger", Epoch: 1, Mode: string(sharing.Space), MPL: 1}); err != nil {
		return err
	}
	if err := frame.Write(conn, msgLaunch, launch{Job: job, Size: 1, Argv: argv, Ranks: []launchRank{{Rank: 0}}, Nodes: []string{a.cfg.Name}}); err != nil {
		return err
	}
	t, _, err := frame.NewReader(conn, maxControlFrame).Read()
	if err != nil {
		return err
	}
	if t != msgWelcome {
		return fmt.Errorf("message type %d, want a welcome", t)
	}
	return nil
}

// RelayAddr is the TCP address of the agent's relay.
func RelayAddr(a *Agent) string { return a.relay.Addr() }

// RelaySocket is the Unix socket of the agent's relay.
func RelaySocket(a *Agent) string { return a.relay.SocketPath() }

// Unsearchable is unsearchable, for tests.
var Unsearchable = unsearchable

// StrobeAddrs are the agent's strobe and heartbeat sockets' addresses.
func StrobeAddrs(a *Agent) (strobeAddr, heartbeatAddr string) {
	return a.udp.LocalAddr(), a.hbUDP.LocalAddr()
}

// GuardGrace is how long cfg's guard waits for its dead agent's next life,
// and whose grace that is.
var GuardGrace = guardGrace

// HoldLaunch holds the agent's launch lock, as a launch under way does,
// until release is called.
func HoldLaunch(a *Agent) (release func()) {
	a.launchMu.Lock()
	return a.launchMu.Unlock
}

// CreateJobCgroup makes job's cgroup in the agent's tree, as a launch
// does before it starts the job's ranks.
func CreateJobCgroup(a *Agent, job int64) error {
	_, err := a.cg.Create(job, 0)
	return err
}

// CgroupSubtree is the name of the agent's cgroup subtree.
func CgroupSubtree(a *Agent) string { return cgroupSubtree(a.cfg) }
