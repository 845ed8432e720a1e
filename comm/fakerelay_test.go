package comm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/frame"
)

// fakeRelay is a relay for the ranks of one job in one process: it
// matches receives per destination rank as comm/relay does (a message
// goes to the oldest posted receive it matches, else queues; a receive
// takes the oldest queued message it matches), releases a barrier when
// every rank has arrived, answers Finalize with Bye, and records every
// frame it gets so tests can assert on the wire traffic.
type fakeRelay struct {
	t    testing.TB
	path string
	ln   net.Listener
	job  int64
	size int

	// Behaviour, set before ranks connect.
	helloFatal string // answer Hello with this Fatal instead of Welcome
	noWelcome  bool   // never answer Hello
	noBye      bool   // never answer Finalize

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a frame is recorded
	frames  []rec
	ranks   []*fakeRank
	conns   map[net.Conn]bool
	arrived map[uint64]int
	wg      sync.WaitGroup
}

// rec is a recorded rank → relay frame with its decoded body.
type rec struct {
	rank int
	t    frame.Type
	v    any
}

type fakeRank struct {
	conn   net.Conn // nil until Hello
	posted []Post
	queue  []fakeMsg
}

type fakeMsg struct {
	src, tag, ctxt int
	data           []byte
}

func (p Post) matches(m fakeMsg) bool {
	return p.Context == m.ctxt &&
		(p.Src == AnySource || p.Src == m.src) &&
		(p.Tag == AnyTag || p.Tag == m.tag)
}

// shortTempDir keeps socket paths under the 108-byte limit whatever the
// test's name.
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "c")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newFakeRelay(t testing.TB, job int64, size int) *fakeRelay {
	t.Helper()
	path := filepath.Join(shortTempDir(t), "relay.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRelay{
		t: t, path: path, ln: ln, job: job, size: size,
		changed: make(chan struct{}),
		ranks:   make([]*fakeRank, size),
		conns:   make(map[net.Conn]bool),
		arrived: make(map[uint64]int),
	}
	for i := range f.ranks {
		f.ranks[i] = &fakeRank{}
	}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeRelay) accept() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[conn] = true
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer conn.Close()
			if err := f.serve(conn); err != nil {
				f.t.Logf("fake relay: %v", err)
			}
		}()
	}
}

// close stops accepting, drops every connection and waits for the
// connection goroutines.
func (f *fakeRelay) close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fakeRelay) serve(conn net.Conn) error {
	fr := frame.NewReader(conn, MaxFrame)
	t, body, err := fr.Read()
	if err != nil {
		return err
	}
	if t != FrameHello {
		return fmt.Errorf("first frame %s", frameName(t))
	}
	var h Hello
	if err := frame.Decode(body, &h); err != nil {
		return err
	}
	rank := h.Rank
	f.mu.Lock()
	f.recordLocked(rank, t, h)
	switch {
	case h.Job != f.job || h.Size != f.size || h.Rank < 0 || h.Rank >= f.size:
		frame.Write(conn, FrameFatal, Fatal{Error: fmt.Sprintf("no rank %d of job %d here", h.Rank, h.Job)})
		f.mu.Unlock()
		return nil
	case f.helloFatal != "":
		frame.Write(conn, FrameFatal, Fatal{Error: f.helloFatal})
		f.mu.Unlock()
		return nil
	case !f.noWelcome:
		f.ranks[rank].conn = conn
		frame.Write(conn, FrameWelcome, Welcome{Mode: "immediate"})
	}
	f.mu.Unlock()
	for {
		t, body, err := fr.Read()
		if err != nil {
			return nil // the rank went away, or the test dropped it
		}
		if err := f.handle(rank, t, body); err != nil {
			return err
		}
	}
}

func (f *fakeRelay) handle(rank int, t frame.Type, body []byte) error {
	var v any
	var err error
	switch t {
	case FrameSend:
		v, err = decoded[Send](body)
	case FramePost:
		v, err = decoded[Post](body)
	case FrameWait:
		v, err = decoded[Wait](body)
	case FrameUnwait:
		v, err = decoded[Unwait](body)
	case FrameArrive:
		v, err = decoded[Arrive](body)
	case FrameStats:
		v, err = decoded[Stats](body)
	case FrameFinalize:
		v, err = decoded[Finalize](body)
	default:
		err = fmt.Errorf("unexpected %s", frameName(t))
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordLocked(rank, t, v)
	switch v := v.(type) {
	case Send:
		dst := f.ranks[v.Dst]
		m := fakeMsg{src: rank, tag: v.Tag, ctxt: v.Context, data: v.Data}
		for i, p := range dst.posted {
			if p.matches(m) {
				dst.posted = append(dst.posted[:i], dst.posted[i+1:]...)
				f.deliverLocked(v.Dst, p, m)
				return nil
			}
		}
		dst.queue = append(dst.queue, m)
	case Post:
		me := f.ranks[rank]
		for i, m := range me.queue {
			if v.matches(m) {
				me.queue = append(me.queue[:i], me.queue[i+1:]...)
				f.deliverLocked(rank, v, m)
				return nil
			}
		}
		me.posted = append(me.posted, v)
	case Arrive:
		f.arrived[v.Seq]++
		if f.arrived[v.Seq] == f.size {
			for _, r := range f.ranks {
				if r.conn != nil {
					frame.Write(r.conn, FrameRelease, Release(v))
				}
			}
		}
	case Finalize:
		if !f.noBye {
			frame.Write(f.ranks[rank].conn, FrameBye, Bye{})
		}
	}
	return nil
}

// decoded is body decoded as a T.
func decoded[T any](body []byte) (any, error) {
	var v T
	err := frame.Decode(body, &v)
	return v, err
}

func (f *fakeRelay) deliverLocked(dst int, p Post, m fakeMsg) {
	if c := f.ranks[dst].conn; c != nil {
		frame.Write(c, FrameDeliver, Deliver{Req: p.Req, Src: m.src, Tag: m.tag, Data: m.data})
	}
}

func (f *fakeRelay) recordLocked(rank int, t frame.Type, v any) {
	f.frames = append(f.frames, rec{rank, t, v})
	close(f.changed)
	f.changed = make(chan struct{})
}

// fatal sends Fatal to rank and closes its connection, as the relay does.
func (f *fakeRelay) fatal(rank int, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.ranks[rank].conn
	frame.Write(c, FrameFatal, Fatal{Error: msg})
	c.Close()
}

// drop closes rank's connection without a word.
func (f *fakeRelay) drop(rank int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranks[rank].conn.Close()
}

// raw writes bytes to rank's connection as they are.
func (f *fakeRelay) raw(rank int, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.ranks[rank].conn.Write(b); err != nil {
		f.t.Errorf("fake relay: raw write: %v", err)
	}
}

// rawFrame writes one frame of type t with body v to rank.
func (f *fakeRelay) rawFrame(rank int, t frame.Type, v any) {
	b, err := frame.Encode(t, v)
	if err != nil {
		f.t.Fatal(err)
	}
	f.raw(rank, b)
}

// recorded returns the frames of type t from rank, in arrival order.
func (f *fakeRelay) recorded(rank int, t frame.Type) []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var vs []any
	for _, r := range f.frames {
		if r.rank == rank && r.t == t {
			vs = append(vs, r.v)
		}
	}
	return vs
}

// await blocks until rank has sent at least n frames of type t and
// returns them. The deadline only catches a hang.
func (f *fakeRelay) await(rank int, t frame.Type, n int) []any {
	f.t.Helper()
	deadline := time.After(time.Minute)
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if vs := f.recorded(rank, t); len(vs) >= n {
			return vs
		}
		select {
		case <-ch:
		case <-deadline:
			f.t.Fatalf("rank %d never sent %d %s frames", rank, n, frameName(t))
		}
	}
}

// sync returns once the relay has processed everything c wrote before:
// a Stats frame is a marker that changes nothing else.
func (f *fakeRelay) sync(c *Comm) {
	f.t.Helper()
	n := len(f.recorded(c.Rank(), FrameStats))
	if err := c.ReportStats(Stats{Iterations: -1}); err != nil {
		f.t.Fatal(err)
	}
	f.await(c.Rank(), FrameStats, n+1)
}

// dialAll connects every rank of the fake relay's job and finalizes them
// when the test ends.
func dialAll(t testing.TB, f *fakeRelay) []*Comm {
	t.Helper()
	cs := make([]*Comm, f.size)
	for i := range cs {
		c, err := Dial(testCtx(t), Config{Relay: f.path, Job: f.job, Rank: i, Size: f.size})
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
		t.Cleanup(func() {
			if err := c.Finalize(context.Background()); err != nil && !errors.Is(err, ErrFinalized) {
				t.Logf("cleanup: rank %d: %v", c.Rank(), err)
			}
		})
	}
	return cs
}

// newJob starts a fake relay and connects size ranks to it.
func newJob(t testing.TB, size int) (*fakeRelay, []*Comm) {
	t.Helper()
	f := newFakeRelay(t, 7, size)
	return f, dialAll(t, f)
}

// testCtx bounds a test's blocking calls so that a bug hangs no longer
// than this; it is not a speed assertion.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
