package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// A numbered message is acknowledged only once its Deliver is in the
// destination's socket: rank 1 posts its receives but does not read, so
// most of rank 0's messages stay queued in the relay when it dies. Every
// message rank 0 was told was delivered must be in rank 1's socket;
// after the restart rank 0 sends again the others, and rank 1 gets every
// message exactly once, in order. Messages of 1 MiB go to the writer
// goroutine whole; of 48 KiB, the relay writes them directly until the
// socket is full, then leaves the rest to the writer.
func TestAckWaitsForTheDeliverWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, size int
	}{{"writer", 24, 1 << 20}, {"direct", 400, 48 << 10}} {
		t.Run(tc.name, func(t *testing.T) { testAckWaitsForTheDeliverWritten(t, uint64(tc.n), tc.size) })
	}
}

func testAckWaitsForTheDeliverWritten(t *testing.T, n uint64, size int) {
	dir, err := os.MkdirTemp("", "aw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	nodes := []string{"n0", "n0"}
	start := func() *Relay {
		r, err := New(Config{Node: "n0", SocketPath: filepath.Join(dir, "n0.sock"), Listen: "127.0.0.1:0", Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	r := start()
	if err := r.AddJob(1, nodes); err != nil {
		t.Fatal(err)
	}
	// n × size is more than a socket holds (the relay asks for 4 MiB,
	// the kernel grants at most twice that).
	body := func(seq uint64) []byte { return bytes.Repeat([]byte{byte(seq)}, size) }
	hello := func(r *Relay, h comm.Hello) *client {
		t.Helper()
		h.Job, h.Size, h.PID, h.Numbers = 1, 2, os.Getpid(), true
		cl := rawClient(t, r)
		cl.send(comm.FrameHello, &h)
		if typ, _ := cl.read(); typ != comm.FrameWelcome {
			t.Fatalf("rank %d hello: frame %d, want Welcome", h.Rank, typ)
		}
		return cl
	}
	dst := hello(r, comm.Hello{Rank: 1})
	src := hello(r, comm.Hello{Rank: 0})
	for range n {
		dst.post(0, 7)
	}
	for seq := uint64(1); seq <= n; seq++ {
		src.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 7, Data: body(seq), Seq: seq})
	}
	// Every message matched, and what the relay had for rank 0 (its
	// acknowledgements, on main all of them) written.
	eventually(t, "every message matched and rank 0's queue written", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		j := r.jobs[1]
		if j == nil || j.st.Delivered != n || j.local[0].conn == nil {
			return false
		}
		q := j.local[0].conn.q
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.buf) == 0 && len(q.tails) == 0 && !q.writing && !q.flushing && !q.claimed
	})
	r.Close()

	// What each rank got from the dead relay: rank 0 its Acked frames,
	// rank 1 the Delivers in its socket.
	acked := map[uint64]bool{}
	for {
		typ, b, err := src.fr.Read()
		if err != nil {
			break
		}
		if typ == comm.FrameAcked {
			var a comm.Acked
			if err := frame.Decode(b, &a); err != nil {
				t.Fatal(err)
			}
			for _, s := range a.Seqs {
				acked[s] = true
			}
		}
	}
	var floor uint64
	for {
		dst.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		typ, b, err := dst.fr.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("read rank 1's old connection: %v", err)
			}
			break
		}
		if typ != comm.FrameDeliver {
			continue
		}
		var d comm.Deliver
		if err := frame.Decode(b, &d); err != nil {
			t.Fatal(err)
		}
		if d.Seq != floor+1 || !bytes.Equal(d.Data, body(d.Seq)) {
			t.Fatalf("old connection: Deliver of message %d, want %d", d.Seq, floor+1)
		}
		floor = d.Seq
	}
	if floor == n {
		t.Fatalf("rank 1 got all %d messages before the restart: nothing was left queued", n)
	}
	var lost []uint64
	for s := range acked {
		if s > floor {
			lost = append(lost, s)
		}
	}
	sort.Slice(lost, func(a, b int) bool { return lost[a] < lost[b] })
	if len(lost) > 0 {
		t.Fatalf("rank 1 got messages 1..%d, but rank 0 was told %v were delivered too: lost with the relay", floor, lost)
	}
	t.Logf("rank 1 had %d of %d messages in its socket when the relay died", floor, n)

	// The restarted relay: rank 1 says what it got, rank 0 sends again
	// what was not acknowledged.
	r = start()
	if err := r.ReattachJob(1, nodes, uint32(os.Getuid())); err != nil {
		t.Fatal(err)
	}
	dst = hello(r, comm.Hello{Rank: 1, Resume: true, Got: []comm.Stream{{Src: 0, Floor: floor}}})
	src = hello(r, comm.Hello{Rank: 0, Resume: true})
	for range n - floor {
		dst.post(0, 7)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := make(chan error, 1)
	go func() { // rank 1 reads meanwhile: what is left does not fit a socket
		for seq := uint64(1); seq <= n; seq++ {
			if acked[seq] {
				continue
			}
			if err := frame.Write(src.c, comm.FrameSend, &comm.Send{Dst: 1, Tag: 7, Data: body(seq), Seq: seq}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for want := floor + 1; want <= n; want++ {
		d := dst.deliver()
		if d.Seq != want || !bytes.Equal(d.Data, body(d.Seq)) {
			t.Fatalf("after the restart: Deliver of message %d, want %d (lost, repeated or out of order)", d.Seq, want)
		}
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("rank 0 sends again: %v", err)
		}
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	dst.post(0, 7) // a repeated message would match it
	dst.expectNothing(200 * time.Millisecond)
}
