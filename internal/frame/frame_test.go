package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type msg struct {
	Job  int64
	Argv []string
}

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, 7, msg{Job: 3, Argv: []string{"sleep", "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, 9, msg{Job: 4}); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&b, 0)
	for _, want := range []struct {
		t   Type
		job int64
	}{{7, 3}, {9, 4}} {
		typ, body, err := r.Read()
		if err != nil || typ != want.t {
			t.Fatalf("read: type %d err %v", typ, err)
		}
		var m msg
		if err := Decode(body, &m); err != nil || m.Job != want.job {
			t.Fatalf("decode: %+v %v", m, err)
		}
	}
	if _, _, err := r.Read(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

func TestBadFrames(t *testing.T) {
	frameOf := func(n uint32, rest ...byte) []byte {
		b := make([]byte, 4, 4+len(rest))
		binary.BigEndian.PutUint32(b, n)
		return append(b, rest...)
	}
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"too large", frameOf(1 << 30), ErrTooLarge},
		{"too short", frameOf(1, Version), ErrShort},
		{"bad version", frameOf(3, 99, 1, 0xc0), ErrVersion},
		{"truncated body", frameOf(10, Version, 1, 0x01), io.ErrUnexpectedEOF},
		{"truncated length", []byte{0, 0}, io.ErrUnexpectedEOF},
	} {
		_, _, err := NewReader(bytes.NewReader(c.in), 1024).Read()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	// A body that is not msgpack for the target decodes to an error.
	var m msg
	if err := Decode([]byte{0xc1}, &m); err == nil {
		t.Error("decoding garbage succeeded")
	}
}

func FuzzReader(f *testing.F) {
	good, _ := Encode(3, msg{Job: 1, Argv: []string{"a"}})
	f.Add(good)
	f.Add([]byte{0, 0, 0, 2, Version, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1<<16)
		for i := 0; i < 100; i++ {
			_, body, err := r.Read()
			if err != nil {
				return
			}
			var m msg
			_ = Decode(body, &m) // must not panic
		}
	})
}

// payload decodes its bin with Bytes.
type payload struct{ Data []byte }

func (p payload) EncodeMsgpack(e *msgpack.Encoder) error { return e.EncodeBytes(p.Data) }

func (p *payload) DecodeMsgpack(d *msgpack.Decoder) (err error) {
	p.Data, err = Bytes(d)
	return err
}

// DecodeBorrowing hands out the frame's own bytes; Decode a copy; both
// refuse a bin longer than the frame.
func TestDecodeBorrowing(t *testing.T) {
	b, err := Encode(7, payload{Data: []byte("borrowed")})
	if err != nil {
		t.Fatal(err)
	}
	body := b[6:]
	var borrowed, copied payload
	if err := DecodeBorrowing(body, &borrowed); err != nil {
		t.Fatal(err)
	}
	if err := Decode(body, &copied); err != nil {
		t.Fatal(err)
	}
	if string(borrowed.Data) != "borrowed" || string(copied.Data) != "borrowed" {
		t.Fatalf("%q %q", borrowed.Data, copied.Data)
	}
	body[len(body)-1] = '!'
	if string(borrowed.Data) != "borrowe!" || string(copied.Data) != "borrowed" {
		t.Fatalf("after changing the frame: borrowed %q, copied %q", borrowed.Data, copied.Data)
	}
	if cap(borrowed.Data) != len(borrowed.Data) {
		t.Fatal("an append to borrowed data would write into the frame")
	}
	var nilData payload
	if err := DecodeBorrowing([]byte{0xc0}, &nilData); err != nil || nilData.Data != nil {
		t.Fatalf("nil bin: %v %v", nilData.Data, err)
	}
	for _, bad := range [][]byte{{0xc4, 5, 'a'}, {0xc5, 0xff}} {
		if err := DecodeBorrowing(bad, &nilData); err == nil {
			t.Fatalf("% x decoded", bad)
		}
	}
}

// twoPayloads writes a payload with PutBytes, then maybe another field:
// only a payload encoded last may be left out.
type twoPayloads struct {
	Data  []byte
	After bool
}

func (p twoPayloads) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeArrayLen(2); err != nil {
		return err
	}
	if !p.After {
		if err := e.EncodeBool(false); err != nil {
			return err
		}
		return PutBytes(e, p.Data)
	}
	if err := PutBytes(e, p.Data); err != nil {
		return err
	}
	return e.EncodeBool(true)
}

// A Splitter's frames are Append's bytes, with large last payloads left
// out where they lie.
func TestSplitterWritesAppendsBytes(t *testing.T) {
	var s Splitter
	var buf []byte
	var tails []Tail
	var want []byte
	for _, n := range []int{-1, 0, 10, MinSplit - 1, MinSplit, 5000, 70000} {
		for _, after := range []bool{false, true} {
			var data []byte
			if n >= 0 {
				data = bytes.Repeat([]byte{byte(n)}, n)
			}
			v := twoPayloads{Data: data, After: after}
			var err error
			if want, err = Append(want, 5, v); err != nil {
				t.Fatal(err)
			}
			var tail []byte
			if buf, tail, err = s.Append(buf, 5, v); err != nil {
				t.Fatal(err)
			}
			if left := tail != nil; left != (!after && n >= MinSplit) {
				t.Fatalf("%d bytes, after %v: tail %d bytes", n, after, len(tail))
			}
			if tail != nil {
				if &tail[0] != &data[0] {
					t.Fatal("the tail is a copy")
				}
				tails = append(tails, Tail{At: len(buf), Data: tail})
			}
		}
	}
	if got := bytes.Join(Gather(nil, buf, tails), nil); !bytes.Equal(got, want) {
		t.Fatalf("split frames differ from Append's (%d vs %d bytes)", len(got), len(want))
	}
}

// A kept body stays as read while the reader goes on, across chunks.
func TestReaderKeep(t *testing.T) {
	var stream bytes.Buffer
	const frames = 100
	for i := range frames {
		if err := Write(&stream, 1, payload{Data: bytes.Repeat([]byte{byte(i)}, 3000+i)}); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(iotest{&stream}, 0)
	var kept [][]byte
	for i := range frames {
		_, body, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		var p payload
		if err := DecodeBorrowing(body, &p); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			r.Keep()
			kept = append(kept, p.Data)
		}
	}
	for k, d := range kept {
		i := 3 * k
		if !bytes.Equal(d, bytes.Repeat([]byte{byte(i)}, 3000+i)) {
			t.Fatalf("kept payload %d changed", i)
		}
	}
}

// iotest reads at most 5000 bytes at a time, as a socket might.
type iotest struct{ r io.Reader }

func (s iotest) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), 5000)]) }
