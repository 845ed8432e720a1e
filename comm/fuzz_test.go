package comm

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/frame"
)

// FuzzRelayStream feeds arbitrary bytes to a rank as the relay's side of
// the connection, after a valid Welcome or from the start, while the rank
// has receives posted, sits in a barrier and then runs a collective and
// Finalize. Whatever the bytes, nothing panics, every call returns, the
// reader goroutine exits, and the Comm ends finalized. `go test` runs the
// seeds; `go test -fuzz FuzzRelayStream ./comm/` explores.
func FuzzRelayStream(f *testing.F) {
	enc := func(t frame.Type, v any) []byte {
		b, err := frame.Encode(t, v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	var valid []byte
	valid = append(valid, enc(FrameDeliver, Deliver{Req: 1, Src: 2, Tag: 0, Data: []byte("x")})...)
	valid = append(valid, enc(FrameDeliver, Deliver{Req: 2, Src: 1, Tag: 5, Data: []byte("y")})...)
	valid = append(valid, enc(FrameRelease, Release{Seq: 1})...)
	f.Add(true, valid)
	f.Add(true, append(valid, enc(FrameBye, Bye{})...))
	f.Add(true, valid[:len(valid)/2])                                                                                        // truncated
	f.Add(true, append(valid, enc(FrameFatal, Fatal{Error: "killed"})...))                                                   // then Fatal
	f.Add(true, []byte{0xff, 0xff, 0xff, 0xff, frame.Version, byte(FrameDeliver)})                                           // oversized length
	f.Add(true, []byte{0, 0, 0, 3, frame.Version + 1, byte(FrameRelease), 0x80})                                             // wrong version
	f.Add(true, []byte{0, 0, 0, 4, frame.Version, byte(FrameDeliver), 0xdd, 0xff})                                           // garbage msgpack
	f.Add(true, []byte{0, 0, 0, 6, frame.Version, byte(FrameDeliver), 0xdb, 0, 0, 0x10})                                     // str32 longer than the body
	f.Add(true, []byte{0, 0, 0, 13, frame.Version, byte(FrameDeliver), 0x81, 0xa1, 'x', 0xc6, 0x7f, 0xff, 0xff, 0, 1, 2, 3}) // 2 GiB claim
	f.Add(true, []byte{0, 0, 0, 1})                                                                                          // shorter than a header
	f.Add(true, enc(FrameDeliver, Deliver{Req: 1, Src: -1, Tag: -7}))
	f.Add(true, enc(FrameRelease, Release{Seq: 2}))
	f.Add(true, enc(FrameWelcome, Welcome{Mode: "bcs"}))
	f.Add(false, enc(FrameWelcome, Welcome{Mode: "immediate"}))
	f.Add(false, append(enc(FrameWelcome, Welcome{}), valid...))
	f.Add(false, enc(FrameFatal, Fatal{Error: "unknown job"}))
	f.Add(false, valid)
	f.Add(false, []byte{})

	f.Fuzz(func(t *testing.T, welcome bool, stream []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		client, server := net.Pipe()
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { fuzzRelay(server, welcome, stream) })

		c := newComm(client, Config{Relay: "fuzz", Job: 1, Rank: 0, Size: 3})
		if err := c.handshake(ctx); err == nil {
			r1, err1 := c.Irecv(AnySource, AnyTag)
			r2, err2 := c.Irecv(1, 5)
			barrier := make(chan struct{})
			go func() {
				defer close(barrier)
				c.Barrier(ctx)
			}()
			if err1 == nil && err2 == nil {
				if ms, err := c.Waitall(ctx, []*Request{r1, r2}); err == nil {
					if ms[0].Source < 0 || ms[0].Source >= 3 || ms[1].Source != 1 || ms[1].Tag != 5 {
						t.Errorf("accepted deliveries that do not match the receives: %+v", ms)
					}
				}
			}
			<-barrier
			c.Allreduce(ctx, 1)
			c.Finalize(ctx)
			if err := c.Send(ctx, 1, 0, nil); err != ErrFinalized {
				t.Errorf("send after Finalize: %v", err)
			}
		}
		select {
		case <-c.readerDone:
		default:
			t.Error("reader still running")
		}
		if ctx.Err() != nil {
			t.Fatal("the rank hung on this stream")
		}
	})
}

// fuzzRelay plays the relay: it reads the Hello, sends a Welcome if told
// to and, once the rank has posted its two receives, the stream; then it
// closes the connection. Without a Welcome the stream follows the Hello.
func fuzzRelay(conn net.Conn, welcome bool, stream []byte) {
	defer conn.Close()
	fr := frame.NewReader(conn, MaxFrame)
	if _, _, err := fr.Read(); err != nil {
		return
	}
	if welcome {
		if frame.Write(conn, FrameWelcome, Welcome{Mode: "immediate"}) != nil {
			return
		}
		for posts := 0; posts < 2; {
			t, _, err := fr.Read()
			if err != nil {
				return
			}
			if t == FramePost {
				posts++
			}
		}
	}
	conn.Write(stream)
}
