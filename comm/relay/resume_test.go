package relay

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// TestInStreamScripts runs testdata/resume: one source's numbered
// messages to one rank, as its relay orders and deduplicates them.
//
//	new known=true|false          a stream (false: the relay restarted)
//	arrive seq=N                  prints what is accepted now, or held / seen
//	resume floor=N above=(a,b)    the rank's Hello: accepted now, and the held ones it had
//
// Regenerate with `go test ./comm/relay -run TestInStreamScripts -rewrite`
// and review the diff.
func TestInStreamScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/resume", func(t *testing.T, path string) {
		var s *inStream[uint64]
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			u := func(key string) uint64 {
				var v string
				d.ScanArgs(t, key, &v)
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %s=%q", d.Pos, key, v)
				}
				return n
			}
			switch d.Cmd {
			case "new":
				var known bool
				d.ScanArgs(t, "known", &known)
				s = newInStream[uint64](known)
				return "ok\n"
			case "arrive":
				seq := u("seq")
				ready, kind := s.arrive(seq, seq)
				switch kind {
				case seenHeld:
					return "duplicate of a held message\n"
				case seenPast:
					return "duplicate: accepted before\n"
				}
				if len(ready) == 0 {
					return "held\n"
				}
				return fmt.Sprintf("accept %v\n", ready)
			case "resume":
				var above []uint64
				if d.HasArg("above") {
					var as []string
					d.ScanArgs(t, "above", &as)
					for _, a := range as {
						n, _ := strconv.ParseUint(a, 10, 64)
						above = append(above, n)
					}
				}
				ready, past := s.resume(u("floor"), above)
				return fmt.Sprintf("accept %v\nreceived before %v\n", ready, past)
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// Two relays, a rank on each numbering its messages (comm with a grace):
// one relay is closed (what it holds is lost, its ranks' connections
// break) and a new one takes its socket with the job reattached; the
// ranks resume, and every message of a two-tag stream in both directions
// arrives exactly once, in order, and every tenth round's barrier
// completes. Then the same with the other relay.
func TestRanksResumeOnARestartedRelay(t *testing.T) {
	dir, err := os.MkdirTemp("", "rr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	nodes := []string{"n0", "n1"}
	start := func(node string) *Relay {
		r, err := New(Config{Node: node, SocketPath: filepath.Join(dir, node+".sock"), Listen: "127.0.0.1:0", Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var mu sync.Mutex // guards relays: the strobes read it
	relays := []*Relay{start("n0"), start("n1")}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range relays {
			r.Close()
		}
	})
	link(relays...)
	for _, r := range relays {
		r.SetDelivery(Buffered, 5*time.Millisecond, 0)
		if err := r.AddJob(1, nodes); err != nil {
			t.Fatal(err)
		}
	}
	stopStrobes := make(chan struct{})
	strobed := make(chan struct{})
	go func() { // the strobes and heartbeats of buffered mode
		defer close(strobed)
		for seq := uint64(1); ; seq++ {
			select {
			case <-stopStrobes:
				return
			case <-time.After(2 * time.Millisecond):
			}
			mu.Lock()
			for _, r := range relays {
				r.Cut(1, seq)
			}
			h0, h1 := relays[0].HeartbeatData(1, seq), relays[1].HeartbeatData(1, seq)
			relays[1].PeerHeartbeat("n0", 1, seq, h0)
			relays[0].PeerHeartbeat("n1", 1, seq, h1)
			mu.Unlock()
		}
	}()
	defer func() { close(stopStrobes); <-strobed }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rounds = 200
	errs := make(chan error, 2)
	progress := [2]chan int{make(chan int, rounds), make(chan int, rounds)}
	for rank := range 2 {
		c, err := comm.Dial(ctx, comm.Config{Relay: relays[rank].SocketPath(), Job: 1, Rank: rank, Size: 2, Grace: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			errs <- func() error {
				peer := 1 - rank
				for i := 1; i <= rounds; i++ {
					for _, tag := range []int{1, 2} {
						if err := c.Send(ctx, peer, tag, []byte(strconv.Itoa(i))); err != nil {
							return err
						}
					}
					for _, tag := range []int{2, 1} {
						m, err := c.Recv(ctx, peer, tag)
						if err != nil {
							return err
						}
						if string(m.Data) != strconv.Itoa(i) {
							return fmt.Errorf("rank %d round %d tag %d: got %q: lost, repeated or out of order", rank, i, tag, m.Data)
						}
					}
					if i%10 == 0 { // barriers too: sent again by a resumed rank
						if err := c.Barrier(ctx); err != nil {
							return fmt.Errorf("rank %d barrier after round %d: %w", rank, i, err)
						}
					}
					progress[rank] <- i
				}
				return c.Finalize(ctx)
			}()
		}()
	}
	waitRound := func(n int) {
		t.Helper()
		for rank := range 2 {
			for {
				select {
				case i := <-progress[rank]:
					if i < n {
						continue
					}
				case err := <-errs:
					t.Fatalf("a rank ended early: %v", err)
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
				break
			}
		}
	}
	began := time.Now()
	waitRound(50)
	t.Logf("50 rounds in %v", time.Since(began).Round(time.Millisecond))
	for _, down := range []int{1, 0} {
		began = time.Now()
		mu.Lock()
		relays[down].Close()
		relays[down] = start(nodes[down])
		relays[down].SetDelivery(Buffered, 5*time.Millisecond, 0)
		link(relays...)
		err := relays[down].ReattachJob(1, nodes, uint32(os.Getuid()))
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		waitRound(50 * (3 - down))
		t.Logf("n%d restarted; 50 rounds after it in %v", down, time.Since(began).Round(time.Millisecond))
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var dups uint64
	for _, r := range relays {
		dups += r.Stats().Duplicates
	}
	t.Logf("duplicates dropped: %d", dups)
}

// TestImmediateBarrierSurvivesRelayRestarts: in immediate mode the job's
// root (rank 0's node) counts barrier arrivals node by node. Its restart
// loses the counts, so the other nodes send theirs again; a node that
// restarts and whose ranks arrive again is not counted twice.
func TestImmediateBarrierSurvivesRelayRestarts(t *testing.T) {
	dir, err := os.MkdirTemp("", "rb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	start := func(node string) *Relay {
		r, err := New(Config{Node: node, SocketPath: filepath.Join(dir, node+".sock"), Listen: "127.0.0.1:0", Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	nodes := []string{"n0", "n1", "n1"} // the root, n0, has rank 0
	relays := []*Relay{start("n0"), start("n1")}
	t.Cleanup(func() {
		for _, r := range relays {
			r.Close()
		}
	})
	link(relays...)
	for _, r := range relays {
		if err := r.AddJob(1, nodes); err != nil {
			t.Fatal(err)
		}
	}
	restart := func(i int) {
		t.Helper()
		relays[i].Close()
		relays[i] = start(nodes[i])
		link(relays...)
		if err := relays[i].ReattachJob(1, nodes, uint32(os.Getuid())); err != nil {
			t.Fatal(err)
		}
	}
	// rootCount is what the root has counted for barrier seq from node.
	rootCount := func(seq uint64, node string) int {
		r := relays[0]
		r.mu.Lock()
		defer r.mu.Unlock()
		if j := r.jobs[1]; j != nil {
			return j.root[seq][node]
		}
		return 0
	}
	released := func(r *Relay) uint64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		if j := r.jobs[1]; j != nil {
			return j.released
		}
		return 0
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ranks := make([]*comm.Comm, len(nodes))
	for rank, n := range nodes {
		path := relays[0].SocketPath()
		if n == "n1" {
			path = relays[1].SocketPath()
		}
		c, err := comm.Dial(ctx, comm.Config{Relay: path, Job: 1, Rank: rank, Size: len(nodes), Grace: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ranks[rank] = c
	}
	enter := func(rks ...int) chan error {
		out := make(chan error, len(rks))
		for _, rk := range rks {
			go func() {
				if err := ranks[rk].Barrier(ctx); err != nil {
					out <- fmt.Errorf("rank %d: %w", rk, err)
					return
				}
				out <- nil
			}()
		}
		return out
	}
	wait := func(what string, done chan error, n int) {
		t.Helper()
		for range n {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			}
		}
	}

	// Barrier 1: n1's ranks are in and counted at the root when the root
	// restarts; rank 0 then enters on the new root.
	n1In := enter(1, 2)
	eventually(t, "n1's count of barrier 1 at the root", func() bool { return rootCount(1, "n1") == 2 })
	restart(0)
	wait("barrier 1 (the root restarted)", merge(n1In, enter(0)), 3)

	// Barrier 2: n1's ranks are in and counted when n1 restarts; its ranks
	// arrive again and n1 counts them again. Until rank 0 enters, the
	// barrier must not complete.
	n1In = enter(1, 2)
	eventually(t, "n1's count of barrier 2 at the root", func() bool { return rootCount(2, "n1") == 2 })
	restart(1)
	eventually(t, "n1's ranks in barrier 2 again", func() bool {
		r := relays[1]
		r.mu.Lock()
		defer r.mu.Unlock()
		j := r.jobs[1]
		return j != nil && j.arrived[2] == 2
	})
	time.Sleep(300 * time.Millisecond) // n1's second count reaches the root
	select {
	case err := <-n1In:
		t.Fatalf("barrier 2 completed without rank 0 (n1 counted twice): %v", err)
	default:
	}
	if s := released(relays[0]); s != 1 {
		t.Fatalf("the root released barrier %d, want 1: rank 0 is not in barrier 2", s)
	}
	wait("barrier 2 (n1 restarted)", merge(n1In, enter(0)), 3)
	for _, c := range ranks {
		if err := c.Finalize(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// merge is a channel with what a and b carry.
func merge(a, b chan error) chan error {
	out := make(chan error, cap(a)+cap(b))
	for _, c := range []chan error{a, b} {
		go func() {
			for range cap(c) {
				out <- <-c
			}
		}()
	}
	return out
}

// A resumed Hello for a job this relay does not have (yet: a restarted
// agent makes its relay, then reattaches its jobs) is closed without a
// Fatal, so the rank dials again within its grace; once the job is
// reattached the same Hello is welcomed. A first Hello for an unknown
// job is still refused with the reason.
func TestResumedHelloWaitsForReattach(t *testing.T) {
	r := newRelay(t, "n0", nil)
	if _, why := tryRank(t, r, 7, 0, 1); !strings.Contains(why, "job 7 is not running on node n0") {
		t.Fatalf("first hello of an unknown job: %q, want a Fatal naming it", why)
	}
	hello := &comm.Hello{Job: 7, Rank: 0, Size: 1, PID: os.Getpid(), Numbers: true, Resume: true}
	cl := rawClient(t, r)
	cl.send(comm.FrameHello, hello)
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if typ, body, err := cl.fr.Read(); err != io.EOF {
		t.Fatalf("resumed hello of a job not reattached: frame %d %q, %v; want the connection closed", typ, body, err)
	}
	if err := r.ReattachJob(7, []string{"n0"}, uint32(os.Getuid())); err != nil {
		t.Fatal(err)
	}
	cl = rawClient(t, r)
	cl.send(comm.FrameHello, hello)
	if typ, _ := cl.read(); typ != comm.FrameWelcome {
		t.Fatalf("resumed hello after the reattach: frame %d, want Welcome", typ)
	}
}

// rootPair is two relays, n0 (the root: rank 0) and n1 (rank 1), with
// job 1 registered, forwarding in one delivery mode; restart closes a
// relay and makes it again, reattached; hello connects rank (resumed or
// not) and reads the Welcome. linked false: n0 does not know n1's
// address (what it sends n1 waits, and dies with it if n0 restarts).
type rootPair struct {
	t      *testing.T
	dir    string
	key    *clusterkey.Key // the relays' links' (nil: plain)
	mode   Delivery        // Buffered: in slices of bcsRestartSlice
	mu     sync.Mutex      // guards relays: bcsRestarts' strobes read it
	relays []*Relay
	lost   [2]atomic.Int32 // per relay: outbound connections it saw fail (it redialled)
}

var rootPairNodes = []string{"n0", "n1"}

func newRootPair(t *testing.T, linked bool) *rootPair {
	return newRootPairIn(t, Immediate, linked, nil)
}

// newKeyedRootPair is newRootPair with the links keyed (nil: plain).
func newKeyedRootPair(t *testing.T, linked bool, key *clusterkey.Key) *rootPair {
	return newRootPairIn(t, Immediate, linked, key)
}

// newRootPairIn is newKeyedRootPair in delivery mode mode.
func newRootPairIn(t *testing.T, mode Delivery, linked bool, key *clusterkey.Key) *rootPair {
	dir, err := os.MkdirTemp("", "rb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &rootPair{t: t, dir: dir, key: key, mode: mode}
	p.relays = []*Relay{p.start("n0"), p.start("n1")}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, r := range p.relays {
			r.Close()
		}
	})
	if linked {
		link(p.relays...)
	} else {
		p.relays[1].SetPeers(map[string]string{"n0": p.relays[0].Addr()})
	}
	for _, r := range p.relays {
		if err := r.AddJob(1, rootPairNodes); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *rootPair) start(node string) *Relay {
	p.t.Helper()
	r, err := p.startAt(node, "127.0.0.1:0")
	if err != nil {
		p.t.Fatal(err)
	}
	return r
}

func (p *rootPair) startAt(node, listen string) (*Relay, error) {
	lost := &p.lost[slices.Index(rootPairNodes, node)]
	count := zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "relay connection lost; redialling" {
			lost.Add(1)
		}
		return nil
	})
	r, err := New(Config{Node: node, SocketPath: filepath.Join(p.dir, node+".sock"), Listen: listen, Key: p.key,
		Log: zaptest.NewLogger(p.t, zaptest.WrapOptions(count))})
	if err == nil && p.mode == Buffered {
		r.SetDelivery(Buffered, bcsRestartSlice, 0)
	}
	return r, err
}

// restart closes node i's relay (what it holds is lost, its ranks'
// connections break) and makes it again, linked to the other, with the
// job reattached.
func (p *rootPair) restart(i int) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.relays[i].Close()
	p.relays[i] = p.start(rootPairNodes[i])
	p.reattach(i)
}

func (p *rootPair) restartRoot() {
	p.t.Helper()
	p.restart(0)
}

// restartRootInPlace is restartRoot with the new relay listening where
// the old one did, as an agent with a fixed relay port restarts: the
// root's peers see no new address.
func (p *rootPair) restartRootInPlace() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	addr := p.relays[0].Addr()
	p.relays[0].Close()
	var err error
	for try := 0; ; try++ { // the port may take a moment to be free
		var r *Relay
		if r, err = p.startAt("n0", addr); err == nil {
			p.relays[0] = r
			break
		}
		if try == 100 {
			p.t.Fatalf("restart the root on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.reattach(0)
}

// reattach links the relays and reattaches the job to node i's; p.mu is
// held.
func (p *rootPair) reattach(i int) {
	p.t.Helper()
	link(p.relays...)
	if err := p.relays[i].ReattachJob(1, rootPairNodes, uint32(os.Getuid())); err != nil {
		p.t.Fatal(err)
	}
}

func (p *rootPair) hello(rank int, resume bool, released uint64) *client {
	p.t.Helper()
	p.mu.Lock()
	r := p.relays[rank]
	p.mu.Unlock()
	cl := rawClient(p.t, r)
	cl.send(comm.FrameHello, &comm.Hello{Job: 1, Rank: rank, Size: 2, PID: os.Getpid(), Numbers: true, Resume: resume, Released: released})
	if typ, _ := cl.read(); typ != comm.FrameWelcome {
		p.t.Fatalf("rank %d's hello answered with frame type %d", rank, typ)
	}
	return cl
}

// awaitRelease reads cl's frames until a Release, which must be of seq
// (the read fails after 10 s without a frame).
func awaitRelease(t *testing.T, cl *client, seq uint64) {
	t.Helper()
	for {
		typ, body := cl.read()
		if typ != comm.FrameRelease {
			continue // Resend, Acked: nothing to send again here
		}
		var rel comm.Release
		if err := frame.Decode(body, &rel); err != nil || rel.Seq != seq {
			t.Fatalf("got Release %+v (%v), want barrier %d", rel, err, seq)
		}
		return
	}
}

// The root's relay restarts after it released a barrier: the other node
// had the Done and its rank left the barrier, but the Release to the
// root's own rank died with the old relay (queued, not written), so that
// rank resumes and arrives again. The new root must complete the
// barrier: the other node counts its last released barrier again when
// the root restarts (recountLocked). Before, the new root counted only
// its own rank and both ranks waited for each other for ever
// (mpi's TestRanksResumeOnRestartedRelays hung about once in 100 runs).
func TestRestartedRootCompletesABarrierItsRankMissed(t *testing.T) {
	p := newRootPair(t, true)
	a, b := p.hello(0, false, 0), p.hello(1, false, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	awaitRelease(t, b, 1)
	// Rank 0 does not read its Release: to it, the Release is lost.
	p.restartRoot()
	a.c.Close()
	a = p.hello(0, true, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1}) // as the libraries replay a barrier not released
	awaitRelease(t, a, 1)
}

// The mirror case: the root's rank had its Release, but the Done to the
// other node died with the root's relay (here: queued, the root not
// knowing n1's address yet). The resumed rank says in its Hello which
// barrier it was released from (Hello.Released), and the new root
// releases it again everywhere; before, rank 1 waited in it for ever
// and rank 0 for rank 1's messages.
func TestRestartedRootReleasesWhatItsRankHad(t *testing.T) {
	p := newRootPair(t, false)
	a, b := p.hello(0, false, 0), p.hello(1, false, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	awaitRelease(t, a, 1)
	b.expectNothing(50 * time.Millisecond) // the Done waits for n1's address
	p.restartRoot()
	a.c.Close()
	p.hello(0, true, 1) // released from barrier 1, in no barrier now
	awaitRelease(t, b, 1)
}

// The root's relay restarts on the same address (an agent with a fixed
// relay port restarts so) while n1's count of barrier 1 is in. n1's
// connection to the old root looks alive to its writer, which only
// writes on it: the count n1 sends again when told of the restart would
// go into the dead connection and be lost, and the barrier would hang.
// The writer reads its connection (watchClose) and redials once the
// peer closes it. Keyed too: a TLS link's Read must not return for
// anything but the peer's close, or its writer would redial for ever.
func TestRestartedRootOnTheSameAddress(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			var key *clusterkey.Key
			if keyed {
				key = relayKey(t, 1)
			}
			p := newKeyedRootPair(t, true, key)
			a, b := p.hello(0, false, 0), p.hello(1, false, 0)
			b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
			eventually(t, "n1's count of barrier 1 at the root", func() bool {
				r := p.relays[0]
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.jobs[1].root[1]["n1"] == 1
			})
			if n := p.lost[1].Load(); n != 0 {
				t.Fatalf("n1 redialled the root %d times before it restarted", n)
			}
			addr := p.relays[0].Addr()
			p.restartRootInPlace()
			if got := p.relays[0].Addr(); got != addr {
				t.Fatalf("the root restarted on %s, not %s", got, addr)
			}
			a.c.Close()
			a = p.hello(0, true, 0)
			a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
			awaitRelease(t, a, 1)
			awaitRelease(t, b, 1)
			// The links are steady: n1 redials no more (a spurious
			// watchClose would redial at once, again and again).
			a.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
			b.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
			awaitRelease(t, a, 2)
			awaitRelease(t, b, 2)
			lost := p.lost[1].Load()
			if lost == 0 {
				t.Fatal("n1 did not see its connection to the old root fail")
			}
			a.send(comm.FrameArrive, &comm.Arrive{Seq: 3})
			b.send(comm.FrameArrive, &comm.Arrive{Seq: 3})
			awaitRelease(t, a, 3)
			awaitRelease(t, b, 3)
			if now := p.lost[1].Load(); now != lost {
				t.Fatalf("n1 redialled the root %d times after the restart's redial", now-lost)
			}
		})
	}
}
