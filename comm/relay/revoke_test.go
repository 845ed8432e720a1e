package relay

import (
	"os"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// The relay's side of taking channels back (revoke.go), with raw ranks
// of one node granted a channel: a relay-path message from a granted peer
// revokes the receiver and waits until it says Drained for that peer; a
// switch to bcs revokes every rank that takes Revoke, once; a rank whose
// Hello did not say it (an older library) is never revoked and nothing
// for it is held.
func TestRevokeHoldsUntilDrained(t *testing.T) {
	r := newRelay(t, "n0", nil)
	hello := func(job int64, rank int, rv bool) *client {
		t.Helper()
		cl := rawClient(t, r)
		cl.send(comm.FrameHello, &comm.Hello{Job: job, Rank: rank, Size: 2, PID: os.Getpid(), Channels: true, Revoke: rv})
		if typ, _ := cl.read(); typ != comm.FrameWelcome {
			t.Fatalf("rank %d: hello answered with frame type %d", rank, typ)
		}
		return cl
	}
	revoked := func(cl *client) {
		t.Helper()
		if typ, _ := cl.read(); typ != comm.FrameRevoke {
			t.Fatalf("got frame type %d, want revoke", typ)
		}
	}
	for id := int64(1); id <= 2; id++ {
		if err := r.AddJob(id, []string{"n0", "n0"}); err != nil {
			t.Fatal(err)
		}
	}
	a0, a1 := hello(1, 0, true), hello(1, 1, true)
	o0, o1 := hello(2, 0, false), hello(2, 1, false)

	// an older library's ranks: nothing held, no Revoke
	o0.msg(1, 5, "old")
	if d := o1.recv(0, 5); string(d.Data) != "old" {
		t.Fatalf("old library: delivered %q", d.Data)
	}

	a0.msg(1, 5, "after the marker")
	revoked(a1)
	req := a1.post(0, 5)
	a1.expectNothing(100 * time.Millisecond)
	a1.send(comm.FrameDrained, &comm.Drained{Peer: 0})
	if d := a1.deliver(); d.Req != req || string(d.Data) != "after the marker" {
		t.Fatalf("after Drained: %+v", d)
	}
	a1.send(comm.FrameDrained, &comm.Drained{Peer: 0}) // a repeat is harmless

	r.SetDelivery(Buffered, 10*time.Millisecond, 0)
	revoked(a0)
	a1.expectNothing(100 * time.Millisecond) // revoked already
	o0.expectNothing(50 * time.Millisecond)
	o1.expectNothing(50 * time.Millisecond)
	if st := r.Stats(); st.Dropped != 0 {
		t.Errorf("dropped %d", st.Dropped)
	}
}

// A Drained that is not msgpack closes that rank's connection with a
// Fatal naming it; the relay carries on.
func TestDrainedMalformed(t *testing.T) {
	r := newRelay(t, "n0", nil)
	if err := r.AddJob(1, []string{"n0", "n0"}); err != nil {
		t.Fatal(err)
	}
	cl := dialRank(t, r, 1, 0, 2)
	if _, err := cl.c.Write([]byte{0, 0, 0, 4, frame.Version, byte(comm.FrameDrained), 0xc1, 0xc1}); err != nil {
		t.Fatal(err)
	}
	typ, body := cl.read()
	var f comm.Fatal
	if typ != comm.FrameFatal || frame.Decode(body, &f) != nil || f.Error == "" {
		t.Fatalf("got frame type %d %q, want a Fatal", typ, body)
	}
	t.Logf("fatal: %s", f.Error)
	dialRank(t, r, 1, 1, 2) // the relay still serves
}

// A relay that restarts while its ranks drain channels forgets what it
// held for them; their resumed Hellos rebuild it (comm.Hello.Draining,
// ChannelPeers): a relay-path message from a peer whose channel the rank
// still drains is held until Drained, and a switch to bcs takes back the
// channels a rank still has.
func TestResumedHelloRebuildsTheHold(t *testing.T) {
	r := newRelay(t, "n0", nil)
	if err := r.ReattachJob(1, []string{"n0", "n0"}, uint32(os.Getuid())); err != nil {
		t.Fatal(err)
	}
	hello := func(rank int, draining, peers []int) *client {
		t.Helper()
		cl := rawClient(t, r)
		cl.send(comm.FrameHello, &comm.Hello{Job: 1, Rank: rank, Size: 2, PID: os.Getpid(), Numbers: true, Resume: true,
			Revoke: true, Draining: draining, ChannelPeers: peers})
		if typ, _ := cl.read(); typ != comm.FrameWelcome {
			t.Fatalf("rank %d: hello answered with frame type %d", rank, typ)
		}
		return cl
	}
	a0 := hello(0, nil, []int{1})                     // still has its channel to rank 1
	a1 := hello(1, []int{0}, nil)                     // took its channels back; drains rank 0's
	if typ, _ := a1.read(); typ != comm.FrameRevoke { // said again while it drains: idempotent
		t.Fatalf("rank 1: got frame type %d, want revoke", typ)
	}
	a0.msg(1, 5, "after the marker")
	req := a1.post(0, 5)
	a1.expectNothing(100 * time.Millisecond)
	a1.send(comm.FrameDrained, &comm.Drained{Peer: 0})
	if d := a1.deliver(); d.Req != req || string(d.Data) != "after the marker" {
		t.Fatalf("after Drained: %+v", d)
	}
	r.SetDelivery(Buffered, 10*time.Millisecond, 0)
	if typ, _ := a0.read(); typ != comm.FrameRevoke {
		t.Fatalf("rank 0: got frame type %d, want revoke", typ)
	}
	a1.expectNothing(50 * time.Millisecond)
}
