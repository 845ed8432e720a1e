package strobe

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestWireRoundTrip(t *testing.T) {
	long := strings.Repeat("n", MaxNameLen)
	msgs := []Message{
		&Strobe{Epoch: 7, Seq: 1, Row: 2, MemberEpoch: 3, SentMono: 123456789},
		&Strobe{Epoch: math.MaxUint64, Seq: math.MaxUint64, Row: math.MaxInt32, MemberEpoch: math.MaxUint64, SentMono: math.MaxInt64},
		&Strobe{Epoch: 1, Seq: 5, Row: -1, SentMono: -5}, // rows are the agent's business
		&Heartbeat{From: "node-a", Epoch: 7, Seq: 9, RecvMono: 1, SwitchedMono: 2, SwitchCost: 3, Lost: 4, Late: 5},
		&Heartbeat{From: long, Epoch: math.MaxUint64, Seq: math.MaxUint64, RecvMono: math.MaxInt64, SwitchedMono: math.MinInt64,
			SwitchCost: math.MaxInt64, Lost: math.MaxUint64, Late: math.MaxUint64},
	}
	for _, m := range msgs {
		b, err := Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", m, err)
		}
		// The strobe socket's messages stay far below one packet.
		if len(b) >= 512 {
			t.Errorf("%v encodes to %d bytes; want < 512", m.MsgType(), len(b))
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal(Marshal(%+v)): %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %+v, want %+v", got, m)
		}
	}
}

func TestWireSizes(t *testing.T) {
	// Typical sizes, for the record (the strobe is sent N times a slice).
	s, _ := Marshal(&Strobe{Epoch: 1 << 62, Seq: 1 << 20, Row: 2, MemberEpoch: 17, SentMono: 1 << 50})
	h, _ := Marshal(&Heartbeat{From: "node-017", Epoch: 1 << 62, Seq: 1 << 20, RecvMono: 1 << 50, SwitchedMono: 1 << 50, SwitchCost: 40000, Lost: 3})
	t.Logf("strobe %d bytes, heartbeat %d bytes", len(s), len(h))
	if len(s) > 64 || len(h) > 128 {
		t.Errorf("strobe %d bytes, heartbeat %d bytes: the compact encoding regressed", len(s), len(h))
	}
}

// envelope encodes an arbitrary envelope for rejection tests.
func envelope(t testing.TB, elems ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.EncodeArrayLen(len(elems)); err != nil {
		t.Fatal(err)
	}
	for _, e := range elems {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestWireRejects(t *testing.T) {
	strobeBody := map[string]any{"e": 1, "s": 2, "r": 0, "t": 5}
	good := envelope(t, 1, 1, strobeBody)
	if _, err := Unmarshal(good); err != nil {
		t.Fatalf("control case: %v", err)
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"garbage", []byte("hello, world"), ErrMalformed},
		{"not an array", envelope(t)[:0], ErrMalformed},
		{"map instead of envelope", func() []byte { b, _ := msgpack.Marshal(strobeBody); return b }(), ErrMalformed},
		{"short envelope", envelope(t, 1, 1), ErrMalformed},
		{"truncated", good[:len(good)-2], ErrMalformed},
		{"trailing bytes", append(bytes.Clone(good), 0xc0), ErrMalformed},
		{"version 0", envelope(t, 0, 1, strobeBody), ErrVersion},
		{"version 2", envelope(t, 2, 1, strobeBody), ErrVersion},
		{"huge version", envelope(t, uint64(math.MaxUint64), 1, strobeBody), ErrVersion},
		{"version as string", envelope(t, "1", 1, strobeBody), ErrMalformed},
		{"type 0", envelope(t, 1, 0, strobeBody), ErrUnknownType},
		{"type 99", envelope(t, 1, 99, strobeBody), ErrUnknownType},
		{"type 257 (would wrap to strobe)", envelope(t, 1, 257, strobeBody), ErrUnknownType},
		{"body of wrong type", envelope(t, 1, 1, "strobe"), ErrMalformed},
		{"field of wrong type", envelope(t, 1, 1, map[string]any{"e": "x", "s": 2}), ErrMalformed},
		{"nil body", envelope(t, 1, 1, nil), ErrMalformed},
		{"strobe seq 0", envelope(t, 1, 1, map[string]any{"e": 1, "s": 0}), ErrMalformed},
		{"heartbeat without sender", envelope(t, 1, 2, map[string]any{"e": 1, "s": 1}), ErrMalformed},
		{"type 3 (membership metadata, package member: not for this socket)", envelope(t, 1, 3, map[string]any{"n": "x"}), ErrUnknownType},
		{"oversize", make([]byte, MaxPacketSize+1), ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Unmarshal(c.data)
			if !errors.Is(err, c.want) {
				t.Fatalf("Unmarshal = %v, %v; want %v", m, err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "strobe: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestWireForwardCompatible(t *testing.T) {
	// A newer sender may add envelope elements and body keys within the
	// same version; this build must read what it knows.
	b := envelope(t, 1, 2, map[string]any{"f": "a", "e": 1, "s": 3, "lo": 2, "zz_blocked": []int{1, 2}}, "future")
	m, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &Heartbeat{From: "a", Epoch: 1, Seq: 3, Lost: 2}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
}

func TestMarshalRejects(t *testing.T) {
	for _, m := range []Message{
		nil,
		&Strobe{Epoch: 1},     // seq 0
		&Heartbeat{Seq: 1},    // no sender
		&Heartbeat{From: "a"}, // seq 0
		&Heartbeat{From: strings.Repeat("x", MaxNameLen+1), Seq: 1},
	} {
		if b, err := Marshal(m); err == nil {
			t.Errorf("Marshal(%+v) = %d bytes, want an error", m, len(b))
		}
	}
}

func mustMarshal(t testing.TB, m Message) []byte {
	t.Helper()
	b, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
