package relay

import (
	"os"
	"testing"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// The relays' side of a broken channel (broken.go), with raw ranks on
// two relays granted a cross-node channel: each one's Broken reaches the
// other rank as it was said; the pair's relay-path messages then pass
// at once, not held as a revoke's would be (both relays struck the pair
// from the ranks' channel peers); a Broken naming the rank itself closes
// its connection with a Fatal, and the relays carry on.
func TestBrokenCarried(t *testing.T) {
	r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	link(r0, r1)
	for _, r := range []*Relay{r0, r1} {
		if err := r.AddJob(1, []string{"n0", "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := rawClient(t, r0), rawClient(t, r1)
	a.send(comm.FrameHello, &comm.Hello{Job: 1, Rank: 0, Size: 2, PID: os.Getpid(), Channels: true, Revoke: true})
	b.send(comm.FrameHello, &comm.Hello{Job: 1, Rank: 1, Size: 2, PID: os.Getpid(), Channels: true, Revoke: true})
	var w comm.Welcome
	for _, cl := range []*client{a, b} {
		typ, body := cl.read()
		if typ != comm.FrameWelcome || frame.Decode(body, &w) != nil || len(w.Peers) != 4 {
			t.Fatalf("hello answered with frame type %d %+v, want a Welcome granting one channel", typ, w)
		}
	}
	broken := func(cl *client) comm.Broken {
		t.Helper()
		typ, body := cl.read()
		var got comm.Broken
		if typ != comm.FrameBroken || frame.Decode(body, &got) != nil {
			t.Fatalf("got frame type %d %q, want broken", typ, body)
		}
		return got
	}
	a.send(comm.FrameBroken, &comm.Broken{Peer: 1, Read: 1 << 40, Reply: true})
	if got := broken(b); got != (comm.Broken{Peer: 0, Read: 1 << 40, Reply: true}) {
		t.Fatalf("rank 1 was told %+v", got)
	}
	b.send(comm.FrameBroken, &comm.Broken{Peer: 0, Read: 7})
	if got := broken(a); got != (comm.Broken{Peer: 1, Read: 7}) {
		t.Fatalf("rank 0 was told %+v", got)
	}
	a.msg(1, 5, "resent")
	if d := b.recv(0, 5); string(d.Data) != "resent" {
		t.Fatalf("rank 1 got %+v", d)
	}
	b.msg(0, 6, "on the relay path")
	if d := a.recv(1, 6); string(d.Data) != "on the relay path" {
		t.Fatalf("rank 0 got %+v", d)
	}

	a.send(comm.FrameBroken, &comm.Broken{Peer: 0})
	typ, body := a.read()
	var f comm.Fatal
	if typ != comm.FrameFatal || frame.Decode(body, &f) != nil || f.Error == "" {
		t.Fatalf("got frame type %d %q, want a Fatal", typ, body)
	}
	t.Logf("fatal: %s", f.Error)
	b.msg(1, 7, "still served")
	if d := b.recv(1, 7); string(d.Data) != "still served" {
		t.Fatalf("rank 1 got %+v", d)
	}
	if st := r0.Stats(); st.Dropped != 0 {
		t.Errorf("dropped %d", st.Dropped)
	}
}
