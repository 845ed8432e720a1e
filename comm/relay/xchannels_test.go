package relay

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// hellos says the hellos at once (each Welcome may wait for others'
// Hellos) and returns each rank's Welcome and descriptors.
func hellos(t *testing.T, rs []*Relay, hs []comm.Hello) ([]comm.Welcome, [][]int) {
	t.Helper()
	ws, fds, errs := make([]comm.Welcome, len(hs)), make([][]int, len(hs)), make([]error, len(hs))
	var wg sync.WaitGroup
	for i := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i], fds[i], errs[i] = sayHello(t, rs[i], hs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", hs[i].Rank, err)
		}
	}
	return ws, fds
}

// peerFd is the descriptor of w's channel to peer (-1: none).
func peerFd(w comm.Welcome, fds []int, peer int) int {
	for i := 0; 4*i+3 < len(w.Peers); i++ {
		if int(w.Peers[4*i])|int(w.Peers[4*i+1])<<8 == peer && i+1 < len(fds) {
			return fds[i+1]
		}
	}
	return -1
}

// say writes msg on fd and checks that it comes out of to.
func say(t *testing.T, fd, to int, msg string) {
	t.Helper()
	if fd < 0 || to < 0 {
		t.Fatalf("no channel (%d → %d)", fd, to)
	}
	if _, err := unix.Write(fd, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	f := func() error {
		tv := unix.Timeval{Sec: 10}
		unix.SetsockoptTimeval(to, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		_, err := io.ReadFull(fdReader(to), got)
		return err
	}
	if err := f(); err != nil || string(got) != msg {
		t.Fatalf("read %q, %v; want %q", got, err, msg)
	}
}

type fdReader int

func (f fdReader) Read(p []byte) (int, error) {
	n, err := unix.Read(int(f), p)
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return max(n, 0), err
}

// Immediate delivery, ranks 0 and 2 on n0 and rank 1 on n1, the relays
// holding the cluster key: each rank gets a channel to each other rank,
// the same-node pair a socket pair, the others a TCP connection that the
// two relays made (the lower rank's dialled) and authenticated. Bytes
// written on one end come out of the other; the relays are not on the
// path. Under bcs nobody gets a channel, at once.
func TestCrossChannels(t *testing.T) {
	key := relayKey(t, 1)
	r0, r1 := keyedRelay(t, "n0", key), keyedRelay(t, "n1", key)
	link(r0, r1)
	nodes := []string{"n0", "n1", "n0"}
	for _, r := range []*Relay{r0, r1} {
		if err := r.AddJob(1, nodes); err != nil {
			t.Fatal(err)
		}
	}
	h := func(rank int) comm.Hello { return comm.Hello{Job: 1, Rank: rank, Size: 3, PID: 1, Channels: true} }
	ws, fds := hellos(t, []*Relay{r0, r1, r0}, []comm.Hello{h(0), h(1), h(2)})
	for rk, w := range ws {
		if len(w.Peers) != 8 || len(fds[rk]) != 3 {
			t.Fatalf("rank %d: granted %v with %d descriptors, want 2 peers", rk, w.Peers, len(fds[rk]))
		}
	}
	for _, p := range [][2]int{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {0, 2}, {2, 0}} {
		say(t, peerFd(ws[p[0]], fds[p[0]], p[1]), peerFd(ws[p[1]], fds[p[1]], p[0]), "from rank "+string(rune('0'+p[0])))
	}
	// The TCP ends send at once (TCP_NODELAY), set by the relays.
	if v, err := unix.GetsockoptInt(peerFd(ws[1], fds[1], 0), unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v == 0 {
		t.Errorf("TCP_NODELAY %d, %v", v, err)
	}
	if st := r0.Stats(); st.Refused != 0 {
		t.Errorf("refused %d connections", st.Refused)
	}

	for _, r := range []*Relay{r0, r1} {
		r.SetDelivery(Buffered, 10*time.Millisecond, 0)
		if err := r.AddJob(2, []string{"n0", "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ws, fds = hellos(t, []*Relay{r0, r1}, []comm.Hello{{Job: 2, Rank: 0, Size: 2, PID: 1, Channels: true}, {Job: 2, Rank: 1, Size: 2, PID: 1, Channels: true}})
	for rk := range ws {
		if len(ws[rk].Peers) != 0 || len(fds[rk]) != 0 {
			t.Errorf("bcs: rank %d granted %v %v", rk, ws[rk].Peers, fds[rk])
		}
	}
	if d := time.Since(start); d > crossWait/2 {
		t.Errorf("bcs: the Welcomes took %s", d)
	}
}

// A rank that does not want cross-node channels (the library's
// COSCHED_MPI_CHANNELS=node, or a rank of comm) makes its remote peers
// take the relay path with it, and neither waits for the grace: both
// Welcomes come without a channel between them, whichever said Hello
// first.
func TestCrossChannelsNotWanted(t *testing.T) {
	r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	link(r0, r1)
	for id := int64(1); id <= 2; id++ {
		for _, r := range []*Relay{r0, r1} {
			if err := r.AddJob(id, []string{"n0", "n1"}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		// job 1: the lower rank does not want them; job 2: the higher
		hs := []comm.Hello{{Job: id, Rank: 0, Size: 2, PID: 1, Channels: true}, {Job: id, Rank: 1, Size: 2, PID: 1, Channels: true}}
		hs[id-1].NodeChannels = true
		ws, fds := hellos(t, []*Relay{r0, r1}, hs)
		for rk := range ws {
			if len(ws[rk].Peers) != 0 || len(fds[rk]) > 1 {
				t.Errorf("job %d: rank %d granted %v %v", id, rk, ws[rk].Peers, fds[rk])
			}
		}
		if d := time.Since(start); d > crossWait/2 {
			t.Errorf("job %d: the Welcomes took %s", id, d)
		}
	}
}

// A relay set to same-node channels only (--mpi-channels node) grants no
// cross-node channel, and neither relay waits for one: set on both nodes,
// on the lower rank's only, or on the higher rank's only.
func TestCrossChannelsNodeOnly(t *testing.T) {
	for _, only := range [][2]bool{{true, true}, {true, false}, {false, true}} {
		r0 := newRelayWith(t, "n0", func(c *Config) { c.NodeChannelsOnly = only[0] })
		r1 := newRelayWith(t, "n1", func(c *Config) { c.NodeChannelsOnly = only[1] })
		link(r0, r1)
		for _, r := range []*Relay{r0, r1} {
			if err := r.AddJob(1, []string{"n0", "n1"}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		ws, fds := hellos(t, []*Relay{r0, r1}, []comm.Hello{{Job: 1, Rank: 0, Size: 2, PID: 1, Channels: true}, {Job: 1, Rank: 1, Size: 2, PID: 1, Channels: true}})
		for rk := range ws {
			if len(ws[rk].Peers) != 0 || len(fds[rk]) > 1 {
				t.Errorf("node-only %v: rank %d granted %v %v", only, rk, ws[rk].Peers, fds[rk])
			}
		}
		if d := time.Since(start); d > crossWait/2 {
			t.Errorf("node-only %v: the Welcomes took %s", only, d)
		}
	}
}

// pairConn opens a connection to r's peer listener and says hello, a
// pair's hello, or raw bytes; it returns what r answered (a frame's type
// and body), or the error that ended the connection.
func pairConn(t *testing.T, r *Relay, first func(net.Conn) error) (frame.Type, pairAnswer, error) {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(crossWait + 10*time.Second))
	if err := first(c); err != nil {
		return 0, pairAnswer{}, err
	}
	var a pairAnswer
	typ, body, err := frame.NewReader(c, 4096).Read()
	if err == nil {
		err = frame.Decode(body, &a)
	}
	return typ, a, err
}

// Connections to the relay's listener that are not a pair's its relays
// make are refused, and the relay carries on: garbage, a pair hello for a
// job not here (ended), for a rank not on the node, from a node the rank
// is not on, from the higher rank; with the cluster key, a connection
// without it. A genuine pair is made afterwards.
func TestPairConnectionsForged(t *testing.T) {
	r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	link(r0, r1)
	for _, r := range []*Relay{r0, r1} {
		if err := r.AddJob(1, []string{"n0", "n1", "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	r1.AddJob(7, []string{"n1"})
	r1.RemoveJob(7)
	hello := func(h pairHello) func(net.Conn) error {
		return func(c net.Conn) error { return frame.Write(c, framePairHello, &h) }
	}
	if _, _, err := pairConn(t, r1, func(c net.Conn) error {
		_, err := c.Write([]byte{0, 0, 0, 9, 1, byte(framePairHello), 0xc1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		return err
	}); err == nil {
		t.Error("malformed pair hello answered")
	}
	if _, _, err := pairConn(t, r1, func(c net.Conn) error {
		_, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		return err
	}); err == nil {
		t.Error("garbage answered")
	}
	for _, h := range []pairHello{
		{Node: "n0", Job: 7, Src: 0, Dst: 1},  // ended
		{Node: "n0", Job: 1, Src: 0, Dst: 0},  // rank 0 is not on n1
		{Node: "n0", Job: 1, Src: 0, Dst: 9},  // out of range
		{Node: "n9", Job: 1, Src: 0, Dst: 1},  // rank 0 is on n0, not n9
		{Node: "n1", Job: 1, Src: 1, Dst: 2},  // a same-node pair
		{Node: "n0", Job: 1, Src: 2, Dst: 1},  // not the lower rank's relay
		{Node: "n0", Job: 1, Src: -1, Dst: 1}, // no such rank
	} {
		typ, a, err := pairConn(t, r1, hello(h))
		if err != nil || typ != framePairAnswer || a.OK || a.Again || a.Err == "" {
			t.Errorf("%+v: answered %d %+v, %v; want a refusal", h, typ, a, err)
		}
	}

	// Genuine: ranks 1 and 2 of job 1 (n1) get channels to rank 0 (n0).
	h := func(rank int) comm.Hello { return comm.Hello{Job: 1, Rank: rank, Size: 3, PID: 1, Channels: true} }
	ws, fds := hellos(t, []*Relay{r0, r1, r1}, []comm.Hello{h(0), h(1), h(2)})
	say(t, peerFd(ws[0], fds[0], 2), peerFd(ws[2], fds[2], 0), "genuine")
	// A second pair hello for a pair made is refused.
	if typ, a, err := pairConn(t, r1, hello(pairHello{Node: "n0", Job: 1, Src: 0, Dst: 1})); err != nil || typ != framePairAnswer || a.OK {
		t.Errorf("a second connection for ranks 0 and 1: %d %+v, %v", typ, a, err)
	}

	// With the cluster key, a connection that does not hold it is refused
	// before a frame is read.
	key := relayKey(t, 1)
	k0 := keyedRelay(t, "n0", key)
	k0.AddJob(1, []string{"n1", "n0"})
	if _, _, err := pairConn(t, k0, hello(pairHello{Node: "n1", Job: 1, Src: 0, Dst: 1})); err == nil {
		t.Error("a pair hello without the key answered")
	}
	for deadline := time.Now().Add(10 * time.Second); k0.Stats().Refused != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("refused %d, want the keyless connection counted", k0.Stats().Refused)
		}
	}
	if !slices.Equal(k0.SharedNodes(), []string{"n1"}) {
		t.Errorf("relay state changed: %v", k0.SharedNodes())
	}
}

// A job whose ranks differ: some ask for every channel, some for
// same-node ones only (COSCHED_MPI_CHANNELS=node), some for none
// (COSCHED_MPI_CHANNELS=0), as cosched's MPI says them. Every pair with a
// rank that opted out is answered "no channel" at once, by that rank's
// relay: the relays' wait for remote peers is set far beyond the
// Welcomes' read deadline (sayHello), so a Welcome that only the timer
// lets go fails the test. Pairs of two ranks that want one still get
// theirs.
func TestCrossChannelsMixedOptOut(t *testing.T) {
	const (
		all  = iota // Channels
		node        // Channels, NodeChannels
		none        // NodeChannels alone
		bare        // nothing: a rank of comm, or an MPI library before "chn"
	)
	for _, tc := range []struct {
		name  string
		nodes []string
		want  []int
		pairs [][2]int // the ranks that get a channel
	}{
		{"lower node-only", []string{"n0", "n1"}, []int{node, all}, nil},
		{"higher node-only", []string{"n0", "n1"}, []int{all, node}, nil},
		{"lower none", []string{"n0", "n1"}, []int{none, all}, nil},
		{"higher none", []string{"n0", "n1"}, []int{all, none}, nil},
		{"three nodes, middle node-only", []string{"n0", "n1", "n2"}, []int{all, node, all}, [][2]int{{0, 2}}},
		{"three nodes, lowest none", []string{"n0", "n1", "n2"}, []int{none, all, all}, [][2]int{{1, 2}}},
		{"lower bare", []string{"n0", "n1"}, []int{bare, all}, nil},
		{"higher bare", []string{"n0", "n1"}, []int{all, bare}, nil},
		{"three nodes, middle bare", []string{"n0", "n1", "n2", "n0"}, []int{all, bare, all, all}, [][2]int{{0, 2}, {0, 3}, {2, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := func(c *Config) { c.CrossWait = 10 * time.Minute }
			byNode := map[string]*Relay{}
			var rs []*Relay
			for _, n := range tc.nodes {
				if byNode[n] == nil {
					byNode[n] = newRelayWith(t, n, slow)
					rs = append(rs, byNode[n])
				}
			}
			link(rs...)
			for _, r := range rs {
				if err := r.AddJob(1, tc.nodes); err != nil {
					t.Fatal(err)
				}
			}
			hs := make([]comm.Hello, len(tc.nodes))
			at := make([]*Relay, len(tc.nodes))
			for rk := range hs {
				// as cosched's MPI says them (mpi/src/conn.c, hello)
				hs[rk] = comm.Hello{Job: 1, Rank: rk, Size: len(tc.nodes), PID: 1, Channels: tc.want[rk] == all || tc.want[rk] == node,
					NodeChannels: tc.want[rk] == node || tc.want[rk] == none}
				at[rk] = byNode[tc.nodes[rk]]
			}
			// sayHello's read deadline (2 × the default wait) ends a
			// Welcome that waits for the 10 min timer.
			ws, fds := hellos(t, at, hs)
			for rk := range ws {
				var want []int
				for _, p := range tc.pairs {
					if p[0] == rk {
						want = append(want, p[1])
					} else if p[1] == rk {
						want = append(want, p[0])
					}
				}
				var got []int
				for peer := range tc.nodes {
					if peerFd(ws[rk], fds[rk], peer) >= 0 {
						got = append(got, peer)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("rank %d (%v) has channels to %v, want %v", rk, hs[rk], got, want)
				}
			}
			for _, p := range tc.pairs {
				say(t, peerFd(ws[p[0]], fds[p[0]], p[1]), peerFd(ws[p[1]], fds[p[1]], p[0]), "granted")
			}
		})
	}
}

// A rank that asks for nothing (comm's) says Hello before its higher
// remote peer's relay has the job: the decline waits there for the job,
// and the peer's Welcome then comes at once, with no channel.
func TestCrossChannelsBareDeclineHeld(t *testing.T) {
	slow := func(c *Config) { c.CrossWait = 10 * time.Minute }
	r0, r1 := newRelayWith(t, "n0", slow), newRelayWith(t, "n1", slow)
	link(r0, r1)
	nodes := []string{"n0", "n1"}
	if err := r0.AddJob(1, nodes); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sayHello(t, r0, comm.Hello{Job: 1, Rank: 0, Size: 2, PID: 1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the decline held at n1", func() bool {
		r1.mu.Lock()
		defer r1.unlock()
		return len(r1.early[1]) == 1 && r1.early[1][0].noCh != nil
	})
	if err := r1.AddJob(1, nodes); err != nil {
		t.Fatal(err)
	}
	w, fds, err := sayHello(t, r1, comm.Hello{Job: 1, Rank: 1, Size: 2, PID: 1, Channels: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Peers) != 0 || len(fds) > 1 {
		t.Errorf("rank 1 granted %v %v", w.Peers, fds)
	}
}
