package comm

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/internal/frame"
)

// Send and Deliver carry every message, so they encode and decode by hand
// (the same msgpack maps their struct tags describe), without the
// reflection msgpack would otherwise use: a third of the relay's CPU time
// per message went there. Unknown keys are skipped, as in every message.

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s Send) EncodeMsgpack(e *msgpack.Encoder) error {
	if s.Seq != 0 { // only then: a relay before ResumeVersion knows no "q" (it would skip it)
		return encodeMap(e, []string{"d", "t", "c", "q"}, []int64{int64(s.Dst), int64(s.Tag), int64(s.Context), int64(s.Seq)}, "x", s.Data)
	}
	return encodeMap(e, []string{"d", "t", "c"}, []int64{int64(s.Dst), int64(s.Tag), int64(s.Context)}, "x", s.Data)
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (s *Send) DecodeMsgpack(d *msgpack.Decoder) error {
	return decodeMap(d, "send", func(key string) (bool, error) {
		var err error
		switch key {
		case "d":
			s.Dst, err = d.DecodeInt()
		case "t":
			s.Tag, err = d.DecodeInt()
		case "c":
			s.Context, err = d.DecodeInt()
		case "q":
			s.Seq, err = d.DecodeUint64()
		case "x":
			s.Data, err = frame.Bytes(d)
		default:
			return false, nil
		}
		return true, err
	})
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m Deliver) EncodeMsgpack(e *msgpack.Encoder) error {
	n := 4
	if m.Seq != 0 {
		n = 5
	}
	if err := e.EncodeMapLen(n); err != nil {
		return err
	}
	if err := e.EncodeString("r"); err != nil {
		return err
	}
	if err := e.EncodeUint(m.Req); err != nil {
		return err
	}
	if m.Seq != 0 {
		if err := e.EncodeString("q"); err != nil {
			return err
		}
		if err := e.EncodeUint(m.Seq); err != nil {
			return err
		}
	}
	return encodeFields(e, []string{"s", "t"}, []int64{int64(m.Src), int64(m.Tag)}, "x", m.Data)
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (m *Deliver) DecodeMsgpack(d *msgpack.Decoder) error {
	return decodeMap(d, "deliver", func(key string) (bool, error) {
		var err error
		switch key {
		case "r":
			m.Req, err = d.DecodeUint64()
		case "s":
			m.Src, err = d.DecodeInt()
		case "t":
			m.Tag, err = d.DecodeInt()
		case "q":
			m.Seq, err = d.DecodeUint64()
		case "x":
			m.Data, err = frame.Bytes(d)
		default:
			return false, nil
		}
		return true, err
	})
}

// encodeMap writes a map of int fields and one bytes field.
func encodeMap(e *msgpack.Encoder, keys []string, vals []int64, bkey string, b []byte) error {
	if err := e.EncodeMapLen(len(keys) + 1); err != nil {
		return err
	}
	return encodeFields(e, keys, vals, bkey, b)
}

func encodeFields(e *msgpack.Encoder, keys []string, vals []int64, bkey string, b []byte) error {
	for i, k := range keys {
		if err := e.EncodeString(k); err != nil {
			return err
		}
		if err := e.EncodeInt(vals[i]); err != nil {
			return err
		}
	}
	if err := e.EncodeString(bkey); err != nil {
		return err
	}
	return frame.PutBytes(e, b) // last: a writer may send it from where it is
}

// decodeMap reads a map, handing each key to field, which decodes the
// value of the keys it knows (true) and leaves the others to be skipped.
func decodeMap(d *msgpack.Decoder, what string, field func(key string) (bool, error)) error {
	n, err := d.DecodeMapLen()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for range max(n, 0) {
		key, err := d.DecodeString()
		if err != nil {
			return fmt.Errorf("%s: key: %w", what, err)
		}
		known, err := field(key)
		if err != nil {
			return fmt.Errorf("%s: field %q: %w", what, key, err)
		}
		if !known {
			if err := d.Skip(); err != nil {
				return fmt.Errorf("%s: field %q: %w", what, key, err)
			}
		}
	}
	return nil
}
