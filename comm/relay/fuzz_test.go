package relay

import (
	"bytes"
	"testing"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// Whatever a rank writes after its hello, the relay neither dies nor
// stops serving the job's other ranks.
func FuzzRankFrames(f *testing.F) {
	enc := func(t frame.Type, v any) []byte {
		b, err := frame.Encode(t, v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	join := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	send := enc(comm.FrameSend, &comm.Send{Dst: 1, Tag: 3, Data: []byte("fuzzed payload")})
	f.Add(send)
	f.Add(join(send, send, enc(comm.FramePost, &comm.Post{Req: 1, Src: 1, Tag: 0})))
	f.Add(join(enc(comm.FramePost, &comm.Post{Req: 1, Src: comm.AnySource, Tag: comm.AnyTag}), enc(comm.FrameWait, &comm.Wait{Reqs: []uint64{1}})))
	f.Add(join(enc(comm.FrameArrive, &comm.Arrive{Seq: 1}), enc(comm.FrameUnwait, &comm.Unwait{Barrier: 1})))
	f.Add(send[:len(send)-3])
	f.Add([]byte{0, 0, 0, 8, frame.Version, byte(comm.FrameSend), 0x81, 0xa1, 'x', 0xc5, 0xff, 0xff})
	f.Add(enc(comm.FrameFinalize, &comm.Finalize{}))
	// cosched's MPI library's frames, good and hostile.
	f.Add(join(enc(comm.FrameProbe, &comm.Probe{Req: 1, Src: comm.AnySource, Tag: comm.AnyTag, Context: 2, Block: true}),
		enc(comm.FrameProbe, &comm.Probe{Req: 1, Src: 1, Tag: 0, Context: 2, Block: true}),
		enc(comm.FrameUnwait, &comm.Unwait{Reqs: []uint64{1}})))
	f.Add(enc(comm.FrameProbe, &comm.Probe{Req: 2, Src: 1, Tag: 9, Context: comm.MaxContext}))
	f.Add(join(enc(comm.FrameColl, &comm.Coll{Seq: 1, Context: 3, Kind: "alltoallv", Root: -1, Bytes: 1 << 40}),
		enc(comm.FrameColl, &comm.Coll{Seq: 2, Context: 3, Kind: "bcast\x00", Root: 7})))
	f.Add(enc(comm.FrameSend, &comm.Send{Dst: 1, Tag: comm.MaxTag, Context: comm.MaxContext - 1, Data: []byte("edge")}))
	f.Add(enc(comm.FrameAbort, &comm.Abort{Code: -1, Error: "\xff\xfe\x00 bye"}))
	f.Add([]byte{0, 0, 0, 6, frame.Version, byte(comm.FrameAbort), 0x81, 0xa1, 'e', 0xd9})
	f.Add([]byte{0, 0, 0, 5, frame.Version, byte(comm.FrameProbe), 0x81, 0xa1, 'b'})
	f.Fuzz(func(t *testing.T, input []byte) {
		r := newRelay(t, "n0", nil)
		if err := r.AddJob(1, []string{"n0", "n0"}); err != nil {
			t.Fatal(err)
		}
		good := dialRank(t, r, 1, 1, 2)
		bad := dialRank(t, r, 1, 0, 2)
		bad.c.Write(input)
		good.msg(1, 9, "still served")
		if d := good.recv(1, 9); string(d.Data) != "still served" {
			t.Fatalf("%q", d.Data)
		}
		bad.c.Close()
		good.msg(1, 9, "after the close")
		if d := good.recv(1, 9); string(d.Data) != "after the close" {
			t.Fatalf("%q", d.Data)
		}
	})
}

// The relay decodes a Send's data in place, out of its read buffer; what
// it keeps (messages not yet received) must not point there once the
// buffer is reused.
func TestUnexpectedMessagesOutliveTheReadBuffer(t *testing.T) {
	r := newRelay(t, "n0", nil)
	if err := r.AddJob(1, []string{"n0", "n0"}); err != nil {
		t.Fatal(err)
	}
	a, b := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	const n, size = 40, 8 << 10 // 320 KB: the relay's 64 KB read buffer turns over
	for i := range n {
		a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 0, Data: bytes.Repeat([]byte{byte(i)}, size)})
	}
	eventually(t, "all sent", func() bool { return r.Stats().Sent == n })
	for i := range n {
		d := b.recv(0, 0)
		if len(d.Data) != size || d.Data[0] != byte(i) || d.Data[size-1] != byte(i) || bytes.Count(d.Data, []byte{byte(i)}) != size {
			t.Fatalf("message %d came back changed (first byte %d)", i, d.Data[0])
		}
	}
}
