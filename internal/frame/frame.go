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
	"bufio"
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
type Reader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewReader returns a Reader that rejects frames longer than max bytes
// (DefaultMax when max ≤ 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMax
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Read returns the next frame's type and msgpack body. The body is valid
// until the next call. io.EOF means the stream ended cleanly between frames.
func (r *Reader) Read() (Type, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if err == io.EOF {
			return 0, nil, io.EOF
		}
		return 0, nil, fmt.Errorf("frame: read length: %w", err)
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	switch {
	case n < 2:
		return 0, nil, fmt.Errorf("frame: %w: length %d", ErrShort, n)
	case n > r.max:
		return 0, nil, fmt.Errorf("frame: %w: %d bytes, limit %d", ErrTooLarge, n, r.max)
	}
	var b []byte
	if n <= r.r.Size() {
		// The frame fits the read buffer: hand out the buffer itself.
		var err error
		if b, err = r.r.Peek(n); err != nil {
			return 0, nil, fmt.Errorf("frame: read %d-byte frame: %w", n, noEOF(err))
		}
		_, _ = r.r.Discard(n) // cannot fail: Peek returned n bytes
	} else {
		if cap(r.buf) < n {
			r.buf = make([]byte, n)
		}
		b = r.buf[:n]
		if _, err := io.ReadFull(r.r, b); err != nil {
			return 0, nil, fmt.Errorf("frame: read %d-byte frame: %w", n, err)
		}
	}
	if b[0] != Version {
		return 0, nil, fmt.Errorf("frame: %w %d (want %d)", ErrVersion, b[0], Version)
	}
	return Type(b[1]), b[2:], nil
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
