package strobe

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode: arbitrary bytes never panic Unmarshal, every error is one of
// the documented kinds, and whatever decodes re-encodes to the same
// message. `go test` runs the seeds; `go test -fuzz FuzzDecode` explores.
func FuzzDecode(f *testing.F) {
	seeds := []Message{
		&Strobe{Epoch: 1, Seq: 1, Row: 0, MemberEpoch: 1, SentMono: 1},
		&Strobe{Epoch: 1 << 63, Seq: 1 << 40, Row: -3, SentMono: -1},
		&Heartbeat{From: "node-1", Epoch: 2, Seq: 3, RecvMono: 4, SwitchedMono: 5, SwitchCost: 6, Lost: 7, Late: 8},
	}
	for _, m := range seeds {
		b := mustMarshal(f, m)
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(b, 0))
	}
	f.Add([]byte{})
	f.Add([]byte{0x93, 0x02, 0x01, 0x80})                   // version 2
	f.Add([]byte{0x93, 0x01, 0x63, 0x80})                   // type 99
	f.Add([]byte{0x93, 0x01, 0x01, 0xc0})                   // nil body
	f.Add([]byte{0x93, 0x01, 0x02, 0x81, 0xa1, 0x66, 0xdb}) // truncated str32 header
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})             // array32 claiming 4G elements
	f.Add([]byte{0x93, 0x01, 0x01, 0x91, 0x01})             // array-encoded body

	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Unmarshal(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) &&
				!errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("undocumented error kind: %v", err)
			}
			return
		}
		b, err := Marshal(m)
		if errors.Is(err, ErrTooLarge) {
			return // decoded from a denser form (e.g. an array body) than Marshal writes
		}
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", m, err)
		}
		again, err := Unmarshal(b)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoding changed the message: %+v → %+v, %v", m, again, err)
		}
	})
}
