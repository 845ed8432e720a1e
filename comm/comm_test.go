package comm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/frame"
)

func TestSendRecv(t *testing.T) {
	_, cs := newJob(t, 2)
	ctx := testCtx(t)
	data := []byte("hello")
	if err := cs[0].Send(ctx, 1, 5, data); err != nil {
		t.Fatal(err)
	}
	copy(data, "XXXXX") // a sent buffer may be reused at once
	m, err := cs[1].Recv(ctx, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != 0 || m.Tag != 5 || string(m.Data) != "hello" {
		t.Fatalf("got %+v", m)
	}
	// To itself, and an empty message.
	if err := cs[1].Send(ctx, 1, 0, nil); err != nil {
		t.Fatal(err)
	}
	m, err = cs[1].Recv(ctx, 1, 0)
	if err != nil || m.Source != 1 || len(m.Data) != 0 {
		t.Fatalf("self send: %+v, %v", m, err)
	}
	if cs[0].Rank() != 0 || cs[1].Size() != 2 || cs[1].Job() != 7 {
		t.Fatalf("identity: rank %d size %d job %d", cs[0].Rank(), cs[1].Size(), cs[1].Job())
	}
}

func TestAnySourceAnyTag(t *testing.T) {
	_, cs := newJob(t, 3)
	ctx := testCtx(t)
	for _, s := range []struct{ from, tag int }{{1, 7}, {2, 9}, {1, 8}, {2, 10}} {
		if err := cs[s.from].Send(ctx, 0, s.tag, []byte{byte(s.tag)}); err != nil {
			t.Fatal(err)
		}
	}
	// A specific tag from any source, a specific source with any tag, then
	// anything: each takes the oldest matching message.
	m, err := cs[0].Recv(ctx, AnySource, 9)
	if err != nil || m.Source != 2 || m.Tag != 9 {
		t.Fatalf("any source, tag 9: %+v, %v", m, err)
	}
	m, err = cs[0].Recv(ctx, 1, AnyTag)
	if err != nil || m.Source != 1 || m.Tag != 7 {
		t.Fatalf("source 1, any tag: %+v, %v", m, err)
	}
	got := map[int]int{}
	for range 2 {
		m, err := cs[0].Recv(ctx, AnySource, AnyTag)
		if err != nil {
			t.Fatal(err)
		}
		if m.Data[0] != byte(m.Tag) {
			t.Fatalf("message %+v carries the wrong data", m)
		}
		got[m.Tag] = m.Source
	}
	if want := map[int]int{8: 1, 10: 2}; !maps.Equal(got, want) {
		t.Fatalf("any/any received %v, want %v", got, want)
	}
}

// Messages from one source with one tag arrive in the order sent, with
// several senders and tags interleaved and receives of every kind.
func TestNonOvertaking(t *testing.T) {
	const size, perSender, tags = 4, 300, 3
	_, cs := newJob(t, size)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for s := 1; s < size; s++ {
		wg.Go(func() {
			for i := range perSender {
				var b [8]byte
				binary.BigEndian.PutUint64(b[:], uint64(i))
				if err := cs[s].Send(ctx, 0, i%tags, b[:]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	last := map[[2]int]int{} // (source, tag) → last sequence number
	check := func(m Message) {
		t.Helper()
		seq := int(binary.BigEndian.Uint64(m.Data))
		k := [2]int{m.Source, m.Tag}
		if prev, ok := last[k]; ok && seq <= prev {
			t.Fatalf("from %d tag %d: message %d after %d", m.Source, m.Tag, seq, prev)
		}
		if seq%tags != m.Tag {
			t.Fatalf("message %d arrived with tag %d", seq, m.Tag)
		}
		last[k] = seq
	}
	recv := func(n, src, tag int) {
		t.Helper()
		for range n {
			m, err := cs[0].Recv(ctx, src, tag)
			if err != nil {
				t.Fatal(err)
			}
			check(m)
		}
	}
	// Every kind of receive, in an order where each can be satisfied:
	recv(perSender/tags, 1, 2) // all of rank 1's tag 2
	// Many receives posted at once for any source with tag 0: the oldest
	// receive takes the oldest message.
	for range 3 {
		rs := make([]*Request, 50)
		for i := range rs {
			var err error
			if rs[i], err = cs[0].Irecv(AnySource, 0); err != nil {
				t.Fatal(err)
			}
		}
		ms, err := cs[0].Waitall(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			check(m)
		}
	}
	recv(50, 3, AnyTag)
	recv((size-1)*perSender-perSender/tags-150-50, AnySource, AnyTag)
	wg.Wait()
	for k, v := range last {
		if v != perSender-tags+k[1] {
			t.Errorf("from %d tag %d: last message %d", k[0], k[1], v)
		}
	}
}

func TestIsendIrecvWaitall(t *testing.T) {
	_, cs := newJob(t, 3)
	ctx := testCtx(t)
	s1, err := cs[0].Isend(1, 4, []byte("to one"))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := cs[0].Irecv(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := cs[0].Isend(2, 4, []byte("to two"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := cs[0].Irecv(2, AnyTag)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		rank int
		tag  int
		data string
	}{{2, 6, "from two"}, {1, 3, "from one"}} {
		m, err := cs[p.rank].Recv(ctx, 0, 4)
		if err != nil || string(m.Data) != "to "+[]string{"", "one", "two"}[p.rank] {
			t.Fatalf("rank %d got %+v, %v", p.rank, m, err)
		}
		if err := cs[p.rank].Send(ctx, 0, p.tag, []byte(p.data)); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := cs[0].Waitall(ctx, []*Request{s1, r1, s2, r2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{{}, {1, 3, []byte("from one")}, {}, {2, 6, []byte("from two")}}
	if len(ms) != len(want) {
		t.Fatalf("%d messages for 4 requests", len(ms))
	}
	for i := range want {
		if ms[i].Source != want[i].Source || ms[i].Tag != want[i].Tag || !bytes.Equal(ms[i].Data, want[i].Data) {
			t.Errorf("ms[%d] = %+v, want %+v", i, ms[i], want[i])
		}
	}
	// Waiting again on a completed request gives the same message.
	for range 2 {
		m, err := cs[0].Wait(ctx, r2)
		if err != nil || m.Source != 2 || string(m.Data) != "from two" {
			t.Fatalf("second wait: %+v, %v", m, err)
		}
	}
	if m, err := cs[0].Wait(ctx, s1); err != nil || m.Data != nil || m.Source != 0 {
		t.Fatalf("wait on a send: %+v, %v", m, err)
	}
	if ms, err := cs[0].Waitall(ctx, nil); err != nil || len(ms) != 0 {
		t.Fatalf("waitall of nothing: %v, %v", ms, err)
	}
}

// Wait tells the relay exactly which receives the rank is blocked on, and
// nothing when they are all complete.
func TestWaitFrameListsIncompleteReceives(t *testing.T) {
	f, cs := newJob(t, 2)
	ctx := testCtx(t)
	var rs []*Request
	for tag := 1; tag <= 3; tag++ {
		r, err := cs[0].Irecv(1, tag)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	s, err := cs[0].Isend(1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs[1].Send(ctx, 0, 2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].Wait(ctx, rs[1]); err != nil {
		t.Fatal(err)
	}
	f.sync(cs[0])
	before := len(f.recorded(0, FrameWait))

	done := make(chan error, 1)
	go func() {
		_, err := cs[0].Waitall(ctx, []*Request{rs[0], s, rs[1], rs[2], rs[0]})
		done <- err
	}()
	w := f.await(0, FrameWait, before+1)[before].(Wait)
	if want := []uint64{rs[0].id, rs[2].id}; !slices.Equal(w.Reqs, want) {
		t.Fatalf("Wait lists %v, want %v", w.Reqs, want)
	}
	for _, tag := range []int{3, 1} {
		if err := cs[1].Send(ctx, 0, tag, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	f.sync(cs[0])
	n := len(f.recorded(0, FrameWait))
	if _, err := cs[0].Waitall(ctx, rs); err != nil {
		t.Fatal(err)
	}
	f.sync(cs[0])
	if got := len(f.recorded(0, FrameWait)); got != n {
		t.Fatalf("waiting on complete requests sent %d Wait frames", got-n)
	}
}

// A cancelled Recv returns ctx's error and its receive stays posted; a
// cancelled Wait can be repeated and completes.
func TestContextCancel(t *testing.T) {
	f, cs := newJob(t, 2)
	ctx := testCtx(t)

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs[0].Recv(rctx, 1, 0)
		done <- err
	}()
	f.await(0, FrameWait, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "recv from 1 tag 0") {
		t.Fatalf("cancelled Recv: %v", err)
	}
	// The relay hears that the rank is no longer blocked on that receive.
	waits, unwaits := f.await(0, FrameWait, 1), f.await(0, FrameUnwait, 1)
	if w, u := waits[0].(Wait), unwaits[0].(Unwait); len(u.Reqs) != 1 || u.Reqs[0] != w.Reqs[0] || u.Barrier != 0 {
		t.Fatalf("wait %+v, then unwait %+v", w, u)
	}

	r, err := cs[0].Irecv(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := cs[0].Wait(wctx, r)
		done <- err
	}()
	f.await(0, FrameWait, 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v", err)
	}
	if _, err := cs[0].Wait(wctx, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a done ctx: %v", err)
	}

	// The first message goes to the abandoned Recv's receive, the oldest.
	for _, s := range []string{"first", "second"} {
		if err := cs[1].Send(ctx, 0, 0, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := cs[0].Wait(ctx, r)
	if err != nil || string(m.Data) != "second" {
		t.Fatalf("wait after cancel: %+v, %v", m, err)
	}
	// A Send with a done ctx sends nothing.
	if err := cs[1].Send(wctx, 0, 0, []byte("never")); !errors.Is(err, context.Canceled) {
		t.Fatalf("send with a done ctx: %v", err)
	}
}

func TestBarrier(t *testing.T) {
	const size, rounds = 4, 5
	_, cs := newJob(t, size)
	ctx := testCtx(t)
	var arrived [rounds]atomic.Int32
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for k := range rounds {
				arrived[k].Add(1)
				if err := c.Barrier(ctx); err != nil {
					t.Error(err)
					return
				}
				if n := arrived[k].Load(); n != size {
					t.Errorf("rank %d left barrier %d with %d ranks arrived", c.Rank(), k+1, n)
				}
			}
		})
	}
	wg.Wait()
}

// A Barrier abandoned through ctx leaves the rank arrived; the next call
// waits for that barrier, then enters the next one.
func TestBarrierCancelled(t *testing.T) {
	f, cs := newJob(t, 3)
	ctx := testCtx(t)
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cs[0].Barrier(bctx) }()
	f.await(0, FrameArrive, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled barrier: %v", err)
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			n := 2
			if c.Rank() == 0 {
				n = 1 // its first is behind it
			}
			for range n {
				if err := c.Barrier(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var seqs []uint64
	for _, v := range f.recorded(0, FrameArrive) {
		seqs = append(seqs, v.(Arrive).Seq)
	}
	if !slices.Equal(seqs, []uint64{1, 2}) {
		t.Fatalf("rank 0 arrived at %v", seqs)
	}
}

// Several goroutines of one rank calling Barrier enter one barrier each,
// one after the other.
func TestBarrierConcurrentCallers(t *testing.T) {
	f, cs := newJob(t, 2)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := cs[0].Barrier(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	for range 3 {
		if err := cs[1].Barrier(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	var seqs []uint64
	for _, v := range f.recorded(0, FrameArrive) {
		seqs = append(seqs, v.(Arrive).Seq)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3}) {
		t.Fatalf("rank 0 arrived at %v", seqs)
	}
}

func TestAlltoall(t *testing.T) {
	const size = 4
	_, cs := newJob(t, size)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for round := range 3 {
				in := make([][]byte, size)
				for j := range in {
					in[j] = fmt.Appendf(nil, "%d→%d #%d", c.Rank(), j, round)
				}
				out, err := c.Alltoall(ctx, in)
				if err != nil {
					t.Error(err)
					return
				}
				for j := range out {
					if want := fmt.Sprintf("%d→%d #%d", j, c.Rank(), round); string(out[j]) != want {
						t.Errorf("rank %d: out[%d] = %q, want %q", c.Rank(), j, out[j], want)
					}
				}
				in[c.Rank()][0] = 'X'
				if out[c.Rank()][0] == 'X' {
					t.Errorf("rank %d: out[self] shares in[self]'s memory", c.Rank())
				}
			}
		})
	}
	wg.Wait()
}

func TestAllreduceIdenticalBits(t *testing.T) {
	const size = 4
	_, cs := newJob(t, size)
	ctx := testCtx(t)
	cases := [][size]float64{
		// In rank order the 1 is absorbed by 1e16: any other order gives 2.
		{1e16, 1, -1e16, 1},
		{0.1, 0.2, 0.3, -0.6},
		{math.Copysign(0, -1), math.Copysign(0, -1), math.Copysign(0, -1), math.Copysign(0, -1)},
		{1, 2, 3, 4},
	}
	got := make([][]float64, size)
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for _, xs := range cases {
				sum, err := c.Allreduce(ctx, xs[c.Rank()])
				if err != nil {
					t.Error(err)
					return
				}
				got[c.Rank()] = append(got[c.Rank()], sum)
			}
		})
	}
	wg.Wait()
	for i, xs := range cases {
		want := xs[0]
		for _, x := range xs[1:] {
			want += x
		}
		for r := range size {
			if math.Float64bits(got[r][i]) != math.Float64bits(want) {
				t.Errorf("case %v: rank %d got %v (%#x), want %v (%#x)", xs, r, got[r][i], math.Float64bits(got[r][i]), want, math.Float64bits(want))
			}
		}
	}
	if want := 1.0; got[0][0] != want {
		t.Errorf("1e16+1-1e16+1 in rank order = %v, want %v", got[0][0], want)
	}
}

// One rank: collectives return at once without traffic.
func TestCollectivesSingleRank(t *testing.T) {
	f, cs := newJob(t, 1)
	ctx := testCtx(t)
	out, err := cs[0].Alltoall(ctx, [][]byte{[]byte("me")})
	if err != nil || len(out) != 1 || string(out[0]) != "me" {
		t.Fatalf("alltoall: %q, %v", out, err)
	}
	if sum, err := cs[0].Allreduce(ctx, 2.5); err != nil || sum != 2.5 {
		t.Fatalf("allreduce: %v, %v", sum, err)
	}
	if err := cs[0].Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	f.sync(cs[0])
	for _, typ := range []frame.Type{FrameSend, FramePost, FrameWait} {
		if n := len(f.recorded(0, typ)); n != 0 {
			t.Errorf("%d %s frames", n, frameName(typ))
		}
	}
}

// Collectives use their own context: a user receive with AnySource and
// AnyTag posted before them is not matched by their messages.
func TestCollectivesDoNotMatchUserReceives(t *testing.T) {
	const size = 3
	f, cs := newJob(t, size)
	ctx := testCtx(t)
	user, err := cs[0].Irecv(AnySource, AnyTag)
	if err != nil {
		t.Fatal(err)
	}
	f.sync(cs[0])
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			if _, err := c.Allreduce(ctx, float64(c.Rank())); err != nil {
				t.Error(err)
			}
			in := make([][]byte, size)
			if _, err := c.Alltoall(ctx, in); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if user.complete() {
		t.Fatalf("a collective's message completed a user receive: %+v", user.msg)
	}
	for _, v := range f.recorded(1, FrameSend) {
		if s := v.(Send); s.Context != ContextCollective || s.Tag < 0 {
			t.Errorf("collective sent %+v", s)
		}
	}
	if err := cs[1].Send(ctx, 0, 0, []byte("user")); err != nil {
		t.Fatal(err)
	}
	m, err := cs[0].Wait(ctx, user)
	if err != nil || m.Source != 1 || string(m.Data) != "user" {
		t.Fatalf("user receive: %+v, %v", m, err)
	}
}

func TestFatalFailsBlockedAndLaterCalls(t *testing.T) {
	f, cs := newJob(t, 2)
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() {
		_, err := cs[0].Recv(ctx, 1, 0)
		done <- err
	}()
	f.await(0, FrameWait, 1)
	const why = "job 7 was cancelled"
	f.fatal(0, why)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), why) {
		t.Fatalf("blocked Recv: %v", err)
	}
	for name, err := range map[string]error{
		"send":     cs[0].Send(ctx, 1, 0, nil),
		"barrier":  cs[0].Barrier(ctx),
		"stats":    cs[0].ReportStats(Stats{}),
		"finalize": cs[0].Finalize(ctx),
	} {
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s after Fatal: %v", name, err)
		}
	}
	if err := cs[0].Send(ctx, 1, 0, nil); !errors.Is(err, ErrFinalized) {
		t.Errorf("send after Finalize: %v", err)
	}
}

func TestRelayGoesAway(t *testing.T) {
	f, cs := newJob(t, 2)
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() {
		_, err := cs[0].Recv(ctx, 1, 0)
		done <- err
	}()
	f.await(0, FrameWait, 1)
	f.drop(0)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "relay closed the connection") {
		t.Fatalf("blocked Recv: %v", err)
	}
	if _, err := cs[0].Irecv(1, 0); err == nil || !strings.Contains(err.Error(), "relay closed the connection") {
		t.Fatalf("later Irecv: %v", err)
	}

	// The whole relay, with a barrier waiting.
	go func() { done <- cs[1].Barrier(ctx) }()
	f.await(1, FrameArrive, 1)
	f.close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "relay closed the connection") {
		t.Fatalf("blocked Barrier: %v", err)
	}
	if _, err := Dial(ctx, Config{Relay: f.path, Job: 7, Rank: 0, Size: 2}); err == nil {
		t.Fatal("dial with no relay succeeded")
	}
}

func TestFinalize(t *testing.T) {
	f, cs := newJob(t, 2)
	ctx := testCtx(t)
	if err := cs[1].Send(ctx, 0, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	got, err := cs[0].Irecv(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].Wait(ctx, got); err != nil {
		t.Fatal(err)
	}
	f.sync(cs[0])
	waits := len(f.recorded(0, FrameWait))
	blocked := make(chan error, 1)
	go func() {
		_, err := cs[0].Recv(ctx, 1, 1)
		blocked <- err
	}()
	f.await(0, FrameWait, waits+1)

	if err := cs[0].Finalize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; !errors.Is(err, ErrFinalized) {
		t.Errorf("Recv blocked during Finalize: %v", err)
	}
	select {
	case <-cs[0].readerDone:
	default:
		t.Error("the reader goroutine outlived Finalize")
	}
	if n := len(f.recorded(0, FrameFinalize)); n != 1 {
		t.Errorf("%d Finalize frames", n)
	}
	send, _ := cs[1].Isend(0, 0, nil)
	calls := map[string]error{}
	calls["send"] = cs[0].Send(ctx, 1, 0, nil)
	_, calls["isend"] = cs[0].Isend(1, 0, nil)
	_, calls["irecv"] = cs[0].Irecv(1, 0)
	_, calls["recv"] = cs[0].Recv(ctx, 1, 0)
	_, calls["wait"] = cs[0].Wait(ctx, got)
	_, calls["waitall"] = cs[0].Waitall(ctx, []*Request{got})
	calls["barrier"] = cs[0].Barrier(ctx)
	_, calls["alltoall"] = cs[0].Alltoall(ctx, make([][]byte, 2))
	_, calls["allreduce"] = cs[0].Allreduce(ctx, 1)
	calls["stats"] = cs[0].ReportStats(Stats{})
	calls["finalize"] = cs[0].Finalize(ctx)
	for name, err := range calls {
		if err != ErrFinalized {
			t.Errorf("%s after Finalize: %v, want ErrFinalized", name, err)
		}
	}
	if _, err := cs[0].Wait(ctx, send); err == nil {
		t.Error("waiting with the wrong Comm succeeded")
	}
}

func TestFinalizeWithoutBye(t *testing.T) {
	f := newFakeRelay(t, 7, 1)
	f.noBye = true
	cs := dialAll(t, f)
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- cs[0].Finalize(ctx) }()
	f.await(0, FrameFinalize, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("finalize: %v", err)
	}
	if err := cs[0].Barrier(testCtx(t)); err != ErrFinalized {
		t.Fatalf("barrier after Finalize: %v", err)
	}
}

func TestMessageSizeLimit(t *testing.T) {
	_, cs := newJob(t, 2)
	ctx := testCtx(t)
	big := make([]byte, MaxMessage)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := cs[0].Send(ctx, 1, 0, big); err != nil {
		t.Fatal(err)
	}
	m, err := cs[1].Recv(ctx, 0, 0)
	if err != nil || !bytes.Equal(m.Data, big) {
		t.Fatalf("MaxMessage bytes: %d received, %v", len(m.Data), err)
	}
	tooBig := append(big, 0)
	if err := cs[0].Send(ctx, 1, 0, tooBig); err == nil || !strings.Contains(err.Error(), "MaxMessage") {
		t.Fatalf("send of MaxMessage+1 bytes: %v", err)
	}
	if _, err := cs[0].Isend(1, 0, tooBig); err == nil {
		t.Fatal("isend of MaxMessage+1 bytes succeeded")
	}
	if _, err := cs[0].Alltoall(ctx, [][]byte{nil, tooBig}); err == nil || !strings.Contains(err.Error(), "rank 1") {
		t.Fatalf("alltoall of MaxMessage+1 bytes: %v", err)
	}
	// Nothing was sent: the connection still works.
	if err := cs[0].Send(ctx, 1, 1, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if m, err := cs[1].Recv(ctx, 0, 1); err != nil || string(m.Data) != "ok" {
		t.Fatalf("after refused sends: %+v, %v", m, err)
	}
}

func TestBadArguments(t *testing.T) {
	_, cs := newJob(t, 2)
	_, other := newJob(t, 2)
	ctx := testCtx(t)
	c := cs[0]
	foreign, err := other[0].Irecv(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"send to -1", "send to -1: destination -1 outside [0, 2)", c.Send(ctx, -1, 0, nil)},
		{"send to size", "destination 2 outside", c.Send(ctx, 2, 0, nil)},
		{"send any", "destination -1", c.Send(ctx, AnySource, 0, nil)},
		{"send tag -1", "tag -1", c.Send(ctx, 1, AnyTag, nil)},
		{"isend tag", "isend to 1: tag -5", second(c.Isend(1, -5, nil))},
		{"irecv src", "source 2 outside", second(c.Irecv(2, 0))},
		{"irecv src -2", "source -2", second(c.Irecv(-2, 0))},
		{"irecv tag", "tag -2", second(c.Irecv(0, -2))},
		{"recv src", "recv from 3 tag 0: source 3", second(c.Recv(ctx, 3, 0))},
		{"wait nil", "nil request", second(c.Wait(ctx, nil))},
		{"waitall nil", "request 1 is nil", second(c.Waitall(ctx, []*Request{foreign, nil}))},
		{"wait foreign", "another Comm", second(c.Wait(ctx, foreign))},
		{"alltoall short", "1 buffers for 2 ranks", second(c.Alltoall(ctx, [][]byte{nil}))},
		{"dial size", "size 0", second(Dial(ctx, Config{Relay: "x", Size: 0}))},
		{"dial rank", "rank 2 outside [0, 2)", second(Dial(ctx, Config{Relay: "x", Rank: 2, Size: 2}))},
		{"dial relay", "no relay", second(Dial(ctx, Config{Size: 1}))},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, tc.err, tc.want)
		}
	}
	// None of that broke the connection.
	if err := c.Send(ctx, 1, 0, []byte("fine")); err != nil {
		t.Fatal(err)
	}
	if m, err := cs[1].Recv(ctx, 0, 0); err != nil || string(m.Data) != "fine" {
		t.Fatalf("%+v, %v", m, err)
	}
}

func second[T any](_ T, err error) error { return err }

func TestConcurrentGoroutines(t *testing.T) {
	const goroutines, msgs = 8, 50
	_, cs := newJob(t, 2)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range msgs {
				if err := cs[0].Send(ctx, 1, g, []byte{byte(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range msgs {
				m, err := cs[1].Recv(ctx, 0, g)
				if err != nil {
					t.Error(err)
					return
				}
				if m.Data[0] != byte(i) {
					t.Errorf("tag %d: message %d where %d was due", g, m.Data[0], i)
				}
			}
		})
	}
	wg.Wait()
}

func TestReportStats(t *testing.T) {
	f, cs := newJob(t, 1)
	s := Stats{Iterations: 10, Compute: 1e9, CommWait: 2e8, Wall: 1.3e9}
	if err := cs[0].ReportStats(s); err != nil {
		t.Fatal(err)
	}
	if got := f.await(0, FrameStats, 1)[0].(Stats); got != s {
		t.Fatalf("relay got %+v, want %+v", got, s)
	}
}

func TestDialRefused(t *testing.T) {
	f := newFakeRelay(t, 7, 2)
	f.helloFatal = "job 7 is not running on node n3"
	_, err := Dial(testCtx(t), Config{Relay: f.path, Job: 7, Rank: 1, Size: 2})
	if err == nil || !strings.Contains(err.Error(), f.helloFatal) || !strings.Contains(err.Error(), "rank 1 of job 7") {
		t.Fatalf("dial: %v", err)
	}
	h := f.await(1, FrameHello, 1)[0].(Hello)
	if h.Job != 7 || h.Rank != 1 || h.Size != 2 || h.PID <= 0 {
		t.Fatalf("hello %+v", h)
	}
}

func TestDialContext(t *testing.T) {
	f := newFakeRelay(t, 7, 1)
	f.noWelcome = true
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := Dial(ctx, Config{Relay: f.path, Job: 7, Rank: 0, Size: 1})
		done <- err
	}()
	f.await(0, FrameHello, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("dial: %v", err)
	}
}

// Relay input the library did not ask for breaks the connection with an
// error that says so, rather than being ignored or panicking.
func TestBadRelayInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(f *fakeRelay, r *Request)
		want string
	}{
		{"unknown request", func(f *fakeRelay, r *Request) {
			f.rawFrame(0, FrameDeliver, Deliver{Req: r.id + 100, Src: 1})
		}, "not pending"},
		{"wrong source", func(f *fakeRelay, r *Request) {
			f.rawFrame(0, FrameDeliver, Deliver{Req: r.id, Src: 0, Tag: 3})
		}, "from rank 0 with tag 3"},
		{"source out of range", func(f *fakeRelay, r *Request) {
			f.rawFrame(0, FrameDeliver, Deliver{Req: r.id, Src: 9, Tag: 3})
		}, "outside [0, 2)"},
		{"garbage body", func(f *fakeRelay, r *Request) {
			f.raw(0, []byte{0, 0, 0, 4, frame.Version, byte(FrameDeliver), 0xc1, 0xc1})
		}, "malformed Deliver"},
		{"2 GiB claimed in 11 bytes", func(f *fakeRelay, r *Request) {
			f.raw(0, []byte{0, 0, 0, 13, frame.Version, byte(FrameDeliver), 0x81, 0xa1, 'x', 0xc6, 0x7f, 0xff, 0xff, 0, 1, 2, 3})
		}, "malformed Deliver"},
		{"unknown type", func(f *fakeRelay, r *Request) { f.rawFrame(0, 99, Bye{}) }, "frame type 99"},
		{"release not arrived", func(f *fakeRelay, r *Request) { f.rawFrame(0, FrameRelease, Release{Seq: 1}) }, "barrier 1"},
		{"bye", func(f *fakeRelay, r *Request) { f.rawFrame(0, FrameBye, Bye{}) }, "Bye without Finalize"},
		{"welcome", func(f *fakeRelay, r *Request) { f.rawFrame(0, FrameWelcome, Welcome{}) }, "second Welcome"},
		{"bad version", func(f *fakeRelay, r *Request) { f.raw(0, []byte{0, 0, 0, 3, 9, byte(FrameBye), 0x80}) }, "version"},
		{"oversized", func(f *fakeRelay, r *Request) { f.raw(0, []byte{0xff, 0xff, 0xff, 0xff}) }, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, cs := newJob(t, 2)
			ctx := testCtx(t)
			r, err := cs[0].Irecv(1, 3)
			if err != nil {
				t.Fatal(err)
			}
			f.sync(cs[0])
			tc.send(f, r)
			_, err = cs[0].Wait(ctx, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("wait: %v, want an error with %q", err, tc.want)
			}
			if err := cs[0].Send(ctx, 1, 0, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("later send: %v", err)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	good := map[string]string{envRelay: "/run/r.sock", envJob: "42", envRank: "3", envSize: "4"}
	cfg, err := configFromEnv(func(k string) string { return good[k] })
	if err != nil || cfg != (Config{Relay: "/run/r.sock", Job: 42, Rank: 3, Size: 4}) {
		t.Fatalf("%+v, %v", cfg, err)
	}
	if g, err := configFromEnv(func(k string) string {
		if k == envGrace {
			return "90s"
		}
		return good[k]
	}); err != nil || g.Grace != 90*time.Second {
		t.Fatalf("with a grace: %+v, %v", g, err)
	}
	for _, tc := range []struct {
		name, value string
		want        []string // in the error
	}{
		{envRelay, "", []string{envRelay, "not set"}},
		{envJob, "", []string{envJob, "not set"}},
		{envJob, "x42", []string{envJob, `"x42"`}},
		{envJob, "99999999999999999999", []string{envJob, "99999999999999999999"}},
		{envRank, "one", []string{envRank, `"one"`}},
		{envRank, "4", []string{envRank, `"4"`, "[0, COSCHED_SIZE=4)"}},
		{envRank, "-1", []string{envRank, `"-1"`}},
		{envSize, "0", []string{envSize, `"0"`, "≥ 1"}},
		{envSize, "", []string{envSize, "not set"}},
		{envGrace, "5", []string{envGrace, `"5"`, "duration"}},
		{envGrace, "-1s", []string{envGrace, `"-1s"`}},
	} {
		env := maps.Clone(good)
		env[tc.name] = tc.value
		_, err := configFromEnv(func(k string) string { return env[k] })
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s=%q: %v, want an error with %q", tc.name, tc.value, err, w)
			}
		}
	}
}

func TestInit(t *testing.T) {
	f := newFakeRelay(t, 12, 2)
	t.Setenv(envRelay, f.path)
	t.Setenv(envJob, "12")
	t.Setenv(envRank, "1")
	t.Setenv(envSize, "2")
	c, err := Init(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Job() != 12 || c.Rank() != 1 || c.Size() != 2 {
		t.Fatalf("job %d rank %d size %d", c.Job(), c.Rank(), c.Size())
	}
	if err := c.Finalize(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envSize, "two")
	if _, err := Init(testCtx(t)); err == nil || !strings.Contains(err.Error(), `COSCHED_SIZE="two"`) {
		t.Fatalf("init with a bad size: %v", err)
	}
}

// Large messages, written from the sender's memory and handed to the
// receiver where they were read, stay intact: a sent buffer is reused at
// once, and received messages are kept while many more are read. The
// first half find their receives posted, the others queue.
func TestLargeMessagesIntact(t *testing.T) {
	_, cs := newJob(t, 2)
	ctx := testCtx(t)
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 100+(i*331)%6000) }
	const n = 200
	var reqs []*Request
	for range n / 2 {
		r, err := cs[1].Irecv(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	buf := make([]byte, 0, 12000)
	for i := range n {
		buf = append(buf[:0], payload(i)...)
		if err := cs[0].Send(ctx, 1, 1, buf); err != nil {
			t.Fatal(err)
		}
		clear(buf) // a sent buffer may be reused at once
	}
	got, err := cs[1].Waitall(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for range n / 2 {
		m, err := cs[1].Recv(ctx, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	for i, m := range got {
		if !bytes.Equal(m.Data, payload(i)) {
			t.Fatalf("message %d: %d bytes, intact %v", i, len(m.Data), bytes.Equal(m.Data, payload(i)))
		}
	}
}
