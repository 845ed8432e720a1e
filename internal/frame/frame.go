// Package frame reads and writes cosched's stream framing: every message on
// a TCP or Unix-socket connection is
//
//	length  uint32, big endian: the bytes that follow (2 + len(body))
//	version uint8: the protocol version (Version)
//	type    uint8: the message type, defined by the protocol using frames
//	body    msgpack
//
// Lengths above the reader's maximum, unknown versions and truncated frames
// are errors: the connection that carried them cannot be trusted to be in
// sync and must be closed (with the error logged). Nothing here panics on
// input.
package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/internal/msgpackcheck"
)

// Version is the framing protocol version written and accepted.
const Version = 1

// DefaultMax is the largest frame a Reader accepts unless told otherwise.
const DefaultMax = 4 << 20

// Errors a Reader returns; check with errors.Is.
var (
	ErrTooLarge = errors.New("frame too large")
	ErrVersion  = errors.New("unsupported frame version")
	ErrShort    = errors.New("frame too short")
)

// Type identifies a message within a protocol.
type Type uint8

// Sizer is implemented by messages that know roughly how large they
// encode (a message carrying a payload): Encode then allocates the frame
// once, at its final size, and the payload is copied once.
type Sizer interface {
	EncodedSizeHint() int
}

// Encode marshals v into a complete frame of type t.
func Encode(t Type, v any) ([]byte, error) {
	hint := 64
	if s, ok := v.(Sizer); ok {
		hint = s.EncodedSizeHint()
	}
	return Append(make([]byte, 0, 6+hint), t, v)
}

// Append marshals v as a frame of type t at the end of dst and returns
// the extended slice: a writer that reuses one buffer for its frames
// encodes without allocating.
func Append(dst []byte, t Type, v any) ([]byte, error) {
	start := len(dst)
	// The body is encoded straight after the header's room, so the frame
	// needs no second copy.
	buf := bytes.NewBuffer(append(dst, 0, 0, 0, 0, 0, 0))
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	if err := enc.Encode(v); err != nil {
		return dst, fmt.Errorf("frame: encode type %d: %w", t, err)
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	b[start+4], b[start+5] = Version, byte(t)
	return b, nil
}

// Splitter encodes frames whose large payload is left out of the
// encoding and written after it (writev) instead of being copied: see
// Append and PutBytes. The zero value is ready; a Splitter is reused by
// one goroutine at a time.
type Splitter struct {
	w splitWriter
}

// MinSplit is the smallest payload Splitter leaves out of a frame.
const MinSplit = 1024

// Append is frame.Append, except that the payload that v's encoder writes
// last with PutBytes, if at least MinSplit bytes, is not copied: it is
// returned as tail, and the frame is head's bytes from len(dst) on
// followed by tail. tail is nil when nothing was left out.
func (s *Splitter) Append(dst []byte, t Type, v any) (head, tail []byte, err error) {
	start := len(dst)
	s.w = splitWriter{buf: append(dst, 0, 0, 0, 0, 0, 0), split: true}
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&s.w)
	err = enc.Encode(v)
	head, tail = s.w.buf, s.w.tail
	s.w = splitWriter{}
	if err != nil {
		return dst, nil, fmt.Errorf("frame: encode type %d: %w", t, err)
	}
	binary.BigEndian.PutUint32(head[start:], uint32(len(head)-start-4+len(tail)))
	head[start+4], head[start+5] = Version, byte(t)
	return head, tail, nil
}

// Tail is a payload Splitter.Append left out: it goes at offset At of
// the frames encoded before and after it.
type Tail struct {
	At   int
	Data []byte
}

// Gather appends to iov the pieces to write, in order: buf cut at each
// tail's offset (ascending), with the tails in between.
func Gather(iov [][]byte, buf []byte, tails []Tail) [][]byte {
	last := 0
	for _, t := range tails {
		if t.At > last {
			iov = append(iov, buf[last:t.At:t.At])
		}
		iov = append(iov, t.Data)
		last = t.At
	}
	if last < len(buf) {
		iov = append(iov, buf[last:])
	}
	return iov
}

// splitWriter is the writer a Splitter encodes into; PutBytes recognizes
// it.
type splitWriter struct {
	buf   []byte
	tail  []byte // the payload left out, written after buf
	split bool   // a payload may still be left out
}

func (w *splitWriter) Write(p []byte) (int, error) {
	w.unsplit()
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *splitWriter) WriteByte(c byte) error {
	w.unsplit()
	w.buf = append(w.buf, c)
	return nil
}

// unsplit copies a payload left out back in: something follows it.
func (w *splitWriter) unsplit() {
	if w.tail != nil {
		w.buf = append(w.buf, w.tail...)
		w.tail = nil
	}
}

// PutBytes encodes b as a msgpack bin (or nil), as Encoder.EncodeBytes
// does, from a message's EncodeMsgpack. Under Splitter.Append, a large b
// encoded last is left out of the encoding, to be written from where it
// is (the bytes on the wire are the same).
func PutBytes(e *msgpack.Encoder, b []byte) error {
	w, ok := e.Writer().(*splitWriter)
	if !ok || !w.split || len(b) < MinSplit {
		return e.EncodeBytes(b)
	}
	if err := e.EncodeBytesLen(len(b)); err != nil {
		return err
	}
	w.unsplit()
	w.tail, w.split = b, false
	return nil
}

// Write encodes v as a frame of type t and writes it to w in one call.
func Write(w io.Writer, t Type, v any) error {
	buf, err := Encode(t, v)
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("frame: write: %w", err)
	}
	return nil
}

// Reader reads frames from a stream.
//
// It reads the stream in chunks, as much as the socket has, and hands out
// bodies that point into the current chunk. A body is valid until the next
// Read, unless the caller calls Keep: the chunk's bytes handed out so far
// are then never reused (later frames fill the rest of the chunk, then a
// new one), so a payload can be kept, or written out later, without a
// copy — the garbage collector frees the chunk once nothing points into
// it. The price is memory: whatever is kept holds its whole chunk.
type Reader struct {
	src  io.Reader
	max  int
	buf  []byte // the chunk: buf[r:w] read but not yet handed out
	r, w int
	kept bool // bytes before r may be referenced: buf is never rewritten
}

// ChunkSize is the size of a Reader's chunks; a frame larger than one has
// a chunk of its own size.
const ChunkSize = 64 << 10

// minRead is the least room a chunk must have left to be read into.
const minRead = 4 << 10

// NewReader returns a Reader that rejects frames longer than max bytes
// (DefaultMax when max ≤ 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMax
	}
	return &Reader{src: r, max: max}
}

// Keep says the caller keeps (part of) the body the last Read returned:
// its bytes will not be overwritten.
func (r *Reader) Keep() { r.kept = true }

// Read returns the next frame's type and msgpack body. The body is valid
// until the next call, or for good after Keep. io.EOF means the stream
// ended cleanly between frames.
func (r *Reader) Read() (Type, []byte, error) {
	if err := r.fill(4); err != nil {
		if err == io.EOF && r.w == r.r {
			return 0, nil, io.EOF
		}
		return 0, nil, fmt.Errorf("frame: read length: %w", noEOF(err))
	}
	n := int(binary.BigEndian.Uint32(r.buf[r.r:]))
	switch {
	case n < 2:
		return 0, nil, fmt.Errorf("frame: %w: length %d", ErrShort, n)
	case n > r.max:
		return 0, nil, fmt.Errorf("frame: %w: %d bytes, limit %d", ErrTooLarge, n, r.max)
	}
	if err := r.fill(4 + n); err != nil {
		return 0, nil, fmt.Errorf("frame: read %d-byte frame: %w", n, noEOF(err))
	}
	b := r.buf[r.r+4 : r.r+4+n : r.r+4+n]
	r.r += 4 + n
	if b[0] != Version {
		return 0, nil, fmt.Errorf("frame: %w %d (want %d)", ErrVersion, b[0], Version)
	}
	return Type(b[1]), b[2:], nil
}

// fill reads until at least k bytes are buffered.
func (r *Reader) fill(k int) error {
	for r.w-r.r < k {
		if len(r.buf)-r.r < k || len(r.buf)-r.w < min(minRead, k-(r.w-r.r)) {
			r.relocate(k)
		}
		m, err := r.src.Read(r.buf[r.w:])
		r.w += m
		if err != nil && r.w-r.r < k {
			return err
		}
		if m == 0 && err == nil {
			continue // io.Reader allows it; the next call reads or fails
		}
	}
	return nil
}

// relocate moves the unread bytes to the start of a chunk with room for
// a k-byte frame: the current one if nothing in it is kept and it is the
// right size, else a new one.
func (r *Reader) relocate(k int) {
	size := max(ChunkSize, k)
	left := r.buf[r.r:r.w]
	if r.kept || len(r.buf) != size {
		r.buf = make([]byte, size)
		r.kept = false
	}
	r.w = copy(r.buf, left)
	r.r = 0
}

// Decode unmarshals a frame body into v. The body is vetted first
// (msgpackcheck), so a length it declares can never make the decoder
// allocate more than the body's size.
func Decode(body []byte, v any) error {
	if err := msgpackcheck.Check(body); err != nil {
		return fmt.Errorf("frame: decode: %w", err)
	}
	if err := msgpack.Unmarshal(body, v); err != nil {
		return fmt.Errorf("frame: decode: %w", err)
	}
	return nil
}

// DecodeBorrowing is Decode, except that the byte slices v decodes with
// Bytes point into body instead of being copied: the caller must copy
// whatever it keeps past body's lifetime (for a Reader, the next Read).
// A relay that re-encodes a payload at once saves a copy and an
// allocation per message this way.
func DecodeBorrowing(body []byte, v any) error {
	if err := msgpackcheck.Check(body); err != nil {
		return fmt.Errorf("frame: decode: %w", err)
	}
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(&borrowReader{Reader: bytes.NewReader(body), body: body})
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("frame: decode: %w", err)
	}
	return nil
}

// borrowReader is the reader DecodeBorrowing decodes from; Bytes
// recognizes it.
type borrowReader struct {
	*bytes.Reader
	body []byte
}

// Bytes decodes a msgpack bin (or nil) for a message's DecodeMsgpack:
// under DecodeBorrowing the result points into the frame, otherwise it is
// a copy.
func Bytes(d *msgpack.Decoder) ([]byte, error) {
	br, ok := d.Buffered().(*borrowReader)
	if !ok {
		return d.DecodeBytes()
	}
	n, err := d.DecodeBytesLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > br.Len() {
		return nil, io.ErrUnexpectedEOF
	}
	off := len(br.body) - br.Len()
	if _, err := br.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, err
	}
	return br.body[off : off+n : off+n], nil
}

// noEOF reports a stream that ended inside a frame as io.ErrUnexpectedEOF,
// as io.ReadFull does.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
