package relay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/telemetry"
)

// The frames cosched's MPI library adds (docs/mpi.md, MPI-WIRE): probes,
// collective announcements, aborts, contexts beyond comm's two.

func (cl *client) probed() comm.Probed {
	cl.t.Helper()
	typ, body := cl.read()
	if typ != comm.FrameProbed {
		cl.t.Fatalf("got frame type %d, want probed", typ)
	}
	var p comm.Probed
	if err := frame.Decode(body, &p); err != nil {
		cl.t.Fatal(err)
	}
	return p
}

func (cl *client) fatal() string {
	cl.t.Helper()
	typ, body := cl.read()
	if typ != comm.FrameFatal {
		cl.t.Fatalf("got frame type %d, want fatal", typ)
	}
	var f comm.Fatal
	if err := frame.Decode(body, &f); err != nil {
		cl.t.Fatal(err)
	}
	return f.Error
}

// The Welcome says the protocol version, which the MPI library checks.
func TestWelcomeSaysTheVersion(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(1, []string{"n0"})
	c := rawClient(t, r)
	c.send(comm.FrameHello, &comm.Hello{Job: 1, Rank: 0, Size: 1})
	typ, body := c.read()
	var w comm.Welcome
	if err := frame.Decode(body, &w); typ != comm.FrameWelcome || err != nil || w.Version != comm.ProtocolVersion || w.Mode != "immediate" {
		t.Fatalf("welcome %d %+v %v", typ, w, err)
	}
}

// Iprobe answers at once; a blocking probe answers when a matching message
// comes, counts the rank as blocked meanwhile, and takes nothing: the
// message is still there for the receive.
func TestProbe(t *testing.T) {
	var blocks blockLog
	r := newRelay(t, "n0", &blocks)
	r.AddJob(1, []string{"n0", "n0"})
	a, b := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	const ctx = 6 // a communicator's point-to-point context
	b.send(comm.FrameProbe, &comm.Probe{Req: 1, Src: comm.AnySource, Tag: comm.AnyTag, Context: ctx})
	if p := b.probed(); p.Req != 1 || p.Found {
		t.Fatalf("iprobe of nothing: %+v", p)
	}
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 4, Context: 0, Data: []byte("other context")})
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 5, Context: ctx, Data: []byte("twelve bytes")})
	// a's sends reach the relay on another connection: probe until they
	// are there (each Iprobe is answered at once).
	var p comm.Probed
	probes := uint64(1)
	for req, deadline := uint64(100), time.Now().Add(10*time.Second); !p.Found; req++ {
		probes++
		if time.Now().After(deadline) {
			t.Fatalf("iprobe found nothing in 10 s: %+v", p)
		}
		b.send(comm.FrameProbe, &comm.Probe{Req: req, Src: comm.AnySource, Tag: comm.AnyTag, Context: ctx})
		if p = b.probed(); p.Req != req {
			t.Fatalf("iprobe %d answered as %+v", req, p)
		}
	}
	if p.Src != 0 || p.Tag != 5 || p.Len != 12 {
		t.Fatalf("iprobe: %+v", p)
	}
	// Blocking, for tag 6 of rank 0: nothing yet.
	b.send(comm.FrameProbe, &comm.Probe{Req: 3, Src: 0, Tag: 6, Context: ctx, Block: true})
	eventually(t, "blocked in a probe", func() bool { return r.Stats().Blocked == 1 })
	b.expectNothing(20 * time.Millisecond)
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 6, Context: ctx, Data: []byte("abc")})
	if p := b.probed(); p.Req != 3 || !p.Found || p.Src != 0 || p.Tag != 6 || p.Len != 3 {
		t.Fatalf("blocking probe: %+v", p)
	}
	eventually(t, "unblocked", func() bool { return r.Stats().Blocked == 0 })
	// Nothing was taken: the receives get all three, in order per context.
	for _, want := range []string{"twelve bytes", "abc"} {
		req := b.postIn(comm.AnySource, comm.AnyTag, ctx)
		if d := b.deliver(); d.Req != req || string(d.Data) != want {
			t.Fatalf("deliver %+v, want %q", d, want)
		}
	}
	req := b.postIn(0, comm.AnyTag, 0)
	if d := b.deliver(); d.Req != req || string(d.Data) != "other context" {
		t.Fatalf("deliver %+v", d)
	}
	// OnBlocked is called from the notifier's goroutine: the Deliver may
	// come first.
	eventually(t, "two block events", func() bool { return len(blocks.get()) >= 2 })
	if got := blocks.get(); len(got) != 2 || got[0] != "1/1:true" || got[1] != "1/1:false" {
		t.Fatalf("block events %v", got)
	}
	if js := r.Stats().Jobs; len(js) != 1 || js[0].Probes != probes+1 {
		t.Fatalf("job stats %+v", js)
	}
}

func (cl *client) postIn(src, tag, ctx int) uint64 {
	cl.next++
	cl.send(comm.FramePost, &comm.Post{Req: cl.next, Src: src, Tag: tag, Context: ctx})
	return cl.next
}

// Unwait cancels a blocking probe: the rank is not blocked any more, and
// a message that comes later answers nothing.
func TestUnwaitCancelsAProbe(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(1, []string{"n0", "n0"})
	a, b := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	b.send(comm.FrameProbe, &comm.Probe{Req: 7, Src: comm.AnySource, Tag: comm.AnyTag, Context: 2, Block: true})
	eventually(t, "blocked in a probe", func() bool { return r.Stats().Blocked == 1 })
	b.send(comm.FrameUnwait, &comm.Unwait{Reqs: []uint64{7}})
	eventually(t, "unblocked", func() bool { return r.Stats().Blocked == 0 })
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 1, Context: 2, Data: []byte("x")})
	b.expectNothing(30 * time.Millisecond)
	req := b.postIn(0, 1, 2)
	if d := b.deliver(); d.Req != req || string(d.Data) != "x" {
		t.Fatalf("deliver %+v", d)
	}
}

func (cl *client) cancelled() comm.Cancelled {
	cl.t.Helper()
	typ, body := cl.read()
	if typ != comm.FrameCancelled {
		cl.t.Fatalf("got frame type %d, want cancelled", typ)
	}
	var c comm.Cancelled
	if err := frame.Decode(body, &c); err != nil {
		cl.t.Fatal(err)
	}
	return c
}

// Cancel takes back a receive still posted (the rank waiting in it is
// not blocked any more, and a later message stays for the next receive);
// a receive already matched is not taken back, and its Deliver comes
// before the answer.
func TestCancel(t *testing.T) {
	var blocks blockLog
	r := newRelay(t, "n0", &blocks)
	r.AddJob(1, []string{"n0", "n0"})
	a, b := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	const ctx = 6
	req := b.postIn(comm.AnySource, comm.AnyTag, ctx)
	b.send(comm.FrameWait, &comm.Wait{Reqs: []uint64{req}})
	eventually(t, "blocked in the receive", func() bool { return r.Stats().Blocked == 1 })
	b.send(comm.FrameCancel, &comm.Cancel{Req: req})
	if c := b.cancelled(); c.Req != req || !c.Done {
		t.Fatalf("cancel of a posted receive: %+v", c)
	}
	eventually(t, "unblocked", func() bool { return r.Stats().Blocked == 0 })
	// the message goes to the next receive, not the cancelled one
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 2, Context: ctx, Data: []byte("kept")})
	b.expectNothing(30 * time.Millisecond)
	next := b.postIn(0, 2, ctx)
	if d := b.deliver(); d.Req != next || string(d.Data) != "kept" {
		t.Fatalf("deliver %+v, want request %d", d, next)
	}
	// matched already: Deliver, then "not cancelled"
	matched := b.postIn(0, 3, ctx)
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 3, Context: ctx, Data: []byte("late")})
	eventually(t, "delivered", func() bool {
		js := r.Stats().Jobs
		return len(js) == 1 && js[0].Delivered == 2
	})
	b.send(comm.FrameCancel, &comm.Cancel{Req: matched})
	if d := b.deliver(); d.Req != matched || string(d.Data) != "late" {
		t.Fatalf("deliver %+v", d)
	}
	if c := b.cancelled(); c.Req != matched || c.Done {
		t.Fatalf("cancel of a matched receive: %+v", c)
	}
	// an unknown request: not cancelled, and the connection lives on
	b.send(comm.FrameCancel, &comm.Cancel{Req: 999})
	if c := b.cancelled(); c.Req != 999 || c.Done {
		t.Fatalf("cancel of an unknown request: %+v", c)
	}
	eventually(t, "two block events", func() bool { return len(blocks.get()) >= 2 })
	if got := blocks.get(); len(got) != 2 || got[0] != "1/1:true" || got[1] != "1/1:false" {
		t.Fatalf("block events %v", got)
	}
}

// A blocking probe answered by a message from another relay, and by one
// delivered in a BCS slice's transfer, not before.
func TestProbeAcrossRelays(t *testing.T) {
	for _, mode := range []Delivery{Immediate, Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
			link(r0, r1)
			nodes := []string{"n0", "n1"}
			for _, r := range []*Relay{r0, r1} {
				r.SetDelivery(mode, 40*time.Millisecond, 0)
				r.AddJob(3, nodes)
			}
			a, b := dialRank(t, r0, 3, 0, 2), dialRank(t, r1, 3, 1, 2)
			b.send(comm.FrameProbe, &comm.Probe{Req: 1, Src: 0, Tag: comm.AnyTag, Context: 4, Block: true})
			eventually(t, "blocked", func() bool { return r1.Stats().Blocked == 1 })
			if mode == Buffered {
				r0.Cut(1, 1)
				r1.Cut(1, 1)
			}
			a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 9, Context: 4, Data: []byte("remote")})
			if mode == Buffered {
				eventually(t, "outbox", func() bool { return r0.Stats().Outbox == 1 })
				b.expectNothing(30 * time.Millisecond)
				r0.Cut(1, 2)
				r1.Cut(1, 2)
				r1.PeerHeartbeat("n0", 1, 2, r0.HeartbeatData(1, 2))
				r0.PeerHeartbeat("n1", 1, 2, r1.HeartbeatData(1, 2))
			}
			if p := b.probed(); !p.Found || p.Src != 0 || p.Tag != 9 || p.Len != 6 {
				t.Fatalf("probed %+v", p)
			}
			req := b.postIn(0, 9, 4)
			if d := b.deliver(); d.Req != req || string(d.Data) != "remote" {
				t.Fatalf("deliver %+v", d)
			}
			js0, js1 := r0.Stats().Jobs, r1.Stats().Jobs
			if len(js0) != 1 || js0[0].Sent != 1 || js0[0].SentBytes != 6 || len(js1) != 1 || js1[0].Delivered != 1 || js1[0].DeliveredBytes != 6 {
				t.Fatalf("job stats n0 %+v n1 %+v", js0, js1)
			}
		})
	}
}

// Contexts up to 2^30 and tags up to 2^31-1 carry messages; beyond, and
// negative ones, end the rank's connection with the reason.
func TestContextsAndTags(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(1, []string{"n0"})
	ok := dialRank(t, r, 1, 0, 1)
	ok.send(comm.FrameSend, &comm.Send{Dst: 0, Tag: comm.MaxTag, Context: comm.MaxContext - 1, Data: []byte("edge")})
	req := ok.postIn(0, comm.MaxTag, comm.MaxContext-1)
	if d := ok.deliver(); d.Req != req || string(d.Data) != "edge" || d.Tag != comm.MaxTag {
		t.Fatalf("deliver %+v", d)
	}
	for i, tc := range []struct {
		typ  frame.Type
		v    any
		want string
	}{
		{comm.FrameSend, &comm.Send{Dst: 0, Tag: 0, Context: comm.MaxContext}, "send in context 1073741824"},
		{comm.FrameSend, &comm.Send{Dst: 0, Tag: 0, Context: -1}, "send in context -1"},
		{comm.FrameSend, &comm.Send{Dst: 0, Tag: comm.MaxTag + 1}, "send with tag 2147483648"},
		{comm.FrameSend, &comm.Send{Dst: 0, Tag: -1}, "send with tag -1"},
		{comm.FramePost, &comm.Post{Req: 1, Src: 0, Tag: 0, Context: comm.MaxContext}, "receive in context"},
		{comm.FramePost, &comm.Post{Req: 1, Src: 0, Tag: -2}, "receive with tag -2"},
		{comm.FrameProbe, &comm.Probe{Req: 1, Src: 3, Tag: 0}, "probe from rank 3"},
		{comm.FrameProbe, &comm.Probe{Req: 1, Src: 0, Tag: 0, Context: -5, Block: true}, "probe in context -5"},
		{comm.FrameColl, &comm.Coll{Seq: 1, Context: 3, Kind: "fold", Root: 0}, `unknown collective "fold"`},
		{comm.FrameColl, &comm.Coll{Seq: 0, Context: 3, Kind: "bcast"}, "collective number 0"},
		{comm.FrameColl, &comm.Coll{Seq: 1, Context: 3, Kind: "bcast", Root: 1}, "root 1 in a job of 1"},
		{comm.FrameColl, &comm.Coll{Seq: 1, Context: 3, Kind: "gatherv", Bytes: -1}, "collective of -1 bytes"},
	} {
		r.RemoveJob(int64(10 + i))
		if err := r.AddJob(int64(10+i), []string{"n0"}); err != nil {
			t.Fatal(err)
		}
		c := dialRank(t, r, int64(10+i), 0, 1)
		c.send(tc.typ, tc.v)
		if got := c.fatal(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Collectives announced are counted per job, with the bytes each rank
// contributes; messages and bytes sent and delivered too, and a job's
// counts stay in Stats for a while after it ended.
func TestJobStats(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(1, []string{"n0", "n0"})
	r.AddJob(2, []string{"n0"})
	a, b := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	c := dialRank(t, r, 2, 0, 1)
	for _, cl := range []*client{a, b} {
		cl.send(comm.FrameColl, &comm.Coll{Seq: 1, Context: 3, Kind: "allreduce", Root: -1, Bytes: 8})
		cl.send(comm.FrameColl, &comm.Coll{Seq: 2, Context: 3, Kind: "bcast", Root: 0, Bytes: 100})
	}
	a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 0, Context: 3, Data: make([]byte, 100)})
	req := b.postIn(0, 0, 3)
	if d := b.deliver(); d.Req != req || len(d.Data) != 100 {
		t.Fatalf("deliver %+v", d)
	}
	c.msg(0, 0, "1234")
	if d := c.recv(0, 0); string(d.Data) != "1234" {
		t.Fatalf("deliver %+v", d)
	}
	want := []telemetry.RelayJobStats{
		{Job: 1, Sent: 1, SentBytes: 100, Delivered: 1, DeliveredBytes: 100, Collectives: 4, CollectiveBytes: 216},
		{Job: 2, Sent: 1, SentBytes: 4, Delivered: 1, DeliveredBytes: 4},
	}
	eventually(t, "the collectives counted", func() bool { return slices.Equal(r.Stats().Jobs, want) })
	r.RemoveJob(1)
	want[0].Ended = true
	if got := r.Stats().Jobs; !slices.Equal(got, want) {
		t.Fatalf("after the job ended: %+v", got)
	}
	if st := r.Stats(); st.Sent != 2 || st.SentBytes != 104 || st.Delivered != 2 {
		t.Fatalf("relay stats %+v", st)
	}
}

// MPI_Abort: the agent hears it at once (OnAbort), with the rank's text
// cleaned; RankEnd, asked once the process is gone, waits for the relay to
// have read the connection to its end, so the Abort is known whatever
// came first; the job's other ranks are still served until the agent
// kills them.
func TestAbort(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	r := newRelayWith(t, "n0", func(cfg *Config) {
		cfg.OnAbort = func(job int64, rank int, a comm.Abort) {
			mu.Lock()
			heard = append(heard, fmt.Sprintf("%d/%d/%d/%s", job, rank, a.Code, a.Error))
			mu.Unlock()
		}
	})
	r.AddJob(4, []string{"n0", "n0"})
	a, b := dialRank(t, r, 4, 0, 2), dialRank(t, r, 4, 1, 2)
	b.send(comm.FrameAbort, &comm.Abort{Code: 3, Error: "bad\ninput\x00 " + strings.Repeat("é", 2000)})
	eventually(t, "abort heard", func() bool { mu.Lock(); defer mu.Unlock(); return len(heard) == 1 })
	mu.Lock()
	got := heard[0]
	mu.Unlock()
	if !strings.HasPrefix(got, "4/1/3/bad input  éé") || len(got) > comm.MaxAbortText+20 || !strings.HasSuffix(got, "é…") {
		t.Fatalf("heard %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.c.Close()
	e := r.RankEnd(ctx, 4, 1)
	if !e.Connected || e.Finalized || e.Abort == nil || e.Abort.Code != 3 {
		t.Fatalf("rank end %+v", e)
	}
	if rank, ab, ok := r.JobAbort(4); !ok || rank != 1 || ab.Code != 3 {
		t.Fatalf("job abort %d %+v %v", rank, ab, ok)
	}
	a.msg(0, 2, "still served")
	if d := a.recv(0, 2); string(d.Data) != "still served" {
		t.Fatalf("%+v", d)
	}
	if e := r.RankEnd(ctx, 4, 0); !e.Connected || e.Abort != nil {
		t.Fatalf("rank 0 %+v", e)
	}
}

// RankEnd of a rank whose last frame, read after its process ended, is
// its Abort: the write and the close race the agent's question.
func TestRankEndWaitsForTheLastFrame(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(4, []string{"n0"})
	a := dialRank(t, r, 4, 0, 1)
	ended := make(chan RankEnd)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ended <- r.RankEnd(ctx, 4, 0)
	}()
	time.Sleep(20 * time.Millisecond) // RankEnd waits
	a.send(comm.FrameAbort, &comm.Abort{Code: 9, Error: "late"})
	a.c.Close()
	if e := <-ended; e.Abort == nil || e.Abort.Code != 9 || e.Abort.Error != "late" {
		t.Fatalf("rank end %+v", e)
	}
}
