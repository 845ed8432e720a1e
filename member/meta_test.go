package member

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// The metadata's bytes are those agents exchanged when it lived in
// package strobe (envelope [1, 3, body]): agents of either build read each
// other.
func TestMetaWireUnchanged(t *testing.T) {
	m := Meta{Name: "a", StrobeAddr: "10.0.0.1:7000", HeartbeatAddr: "10.0.0.1:7003", ControlAddr: "10.0.0.1:7001",
		APIAddr: "10.0.0.1:8080", RelayAddr: "10.0.0.1:7002", CPUs: 64, Controller: true}
	b, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	const want = "93010388a16ea161a27361ad31302e302e302e313a37303030a26861ad31302e302e302e313a37303033a26361ad31302e302e302e313a37303031a26161ad31302e302e302e313a38303830a27261ad31302e302e302e313a37303032a363707540a363746cc3"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, want)
	}
	back, err := decodeMeta(b)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestMetaRejects(t *testing.T) {
	for _, m := range []Meta{{}, {Name: strings.Repeat("x", 1000)}, {Name: "a", CPUs: -1}} {
		if b, err := encodeMeta(m); err == nil {
			t.Errorf("encodeMeta(%+v) = %d bytes, want an error", m, len(b))
		}
	}
	for _, b := range [][]byte{nil, []byte("not msgpack"), {0x93, 0x01}, {0x93, 0x02, 0x03, 0x80},
		{0x93, 0x01, 0x01, 0x82, 0xa1, 0x65, 0x01, 0xa1, 0x73, 0x01}, // a strobe: {"e": 1, "s": 1}
		{0x93, 0x01, 0x03, 0x80},                                     // no name
		{0xdd, 0xff, 0xff, 0xff, 0xff}} {
		if m, err := decodeMeta(b); err == nil {
			t.Errorf("decodeMeta(%x) = %+v, want an error", b, m)
		}
	}
}

func TestMetaSizeLimit(t *testing.T) {
	m := Meta{Name: "a", StrobeAddr: strings.Repeat("h", 200), ControlAddr: strings.Repeat("h", 200), APIAddr: strings.Repeat("h", 200)}
	_, err := encodeMeta(m)
	if err == nil || !strings.Contains(err.Error(), "512") {
		t.Fatalf("encodeMeta of an oversize meta: %v; want an error naming the limit", err)
	}
}
