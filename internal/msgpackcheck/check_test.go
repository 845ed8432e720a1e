package msgpackcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

type deliver struct {
	Req      uint64
	Src, Tag int
	Data     []byte
}

func TestCheckAcceptsMsgpack(t *testing.T) {
	values := []any{
		deliver{Req: 1 << 40, Src: 3, Tag: 1 << 20, Data: []byte("payload")},
		deliver{Data: make([]byte, 70000)},
		struct{ Mode string }{strings.Repeat("m", 300)},
		struct{ Seq uint64 }{1<<64 - 1},
		struct{ Error string }{strings.Repeat("e", 70000)},
		struct{}{},
		map[string]any{
			"ints":   []any{0, 1, -1, -33, 127, 128, 255, 256, 65535, 65536, 1 << 33, -1 << 40, uint64(1 << 63)},
			"floats": []any{float32(1.5), 2.5},
			"misc":   []any{nil, true, false, "", []byte{}, time.Unix(1, 2), time.Unix(1<<40, 0)},
			"nested": [][]map[string]int{{{"a": 1}}},
			"long":   make([]int, 20),
			"big":    map[int]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 10: 10, 11: 11, 12: 12, 13: 13, 14: 14, 15: 15, 16: 16},
		},
	}
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(b); err != nil {
			t.Errorf("%T: %v", v, err)
		}
		// Every strict prefix of one value is truncated.
		for n := range len(b) {
			if Check(b[:n]) == nil {
				t.Fatalf("%T: %d-byte prefix of %d accepted", v, n, len(b))
			}
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"bin32 of 2 GiB", []byte{0x81, 0xa1, 'x', 0xc6, 0x7f, 0xff, 0xff, 0, 1, 2, 3}},
		{"str32 key", []byte{0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}},
		{"array32", []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}},
		{"map32", []byte{0xdf, 0, 0, 0, 2, 0xc0, 0xc0, 0xc0}},
		{"ext32", []byte{0xc9, 0, 1, 0, 0, 5, 0}},
		{"never used", []byte{0xc1}},
		{"empty", nil},
		{"deep", []byte(strings.Repeat("\x91", MaxDepth) + "\xc0")},
	} {
		if err := Check(tc.body); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := Check([]byte(strings.Repeat("\x91", MaxDepth-1) + "\xc0")); err != nil {
		t.Errorf("nesting within the bound: %v", err)
	}
}
