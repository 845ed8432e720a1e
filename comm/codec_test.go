package comm

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// The hand-written codecs speak exactly the maps the struct tags describe:
// what reflection would write decodes by hand, and back, and keys a later
// version adds are skipped.
func TestHandWrittenCodecsMatchTheTags(t *testing.T) {
	type sendTags struct {
		Dst     int    `msgpack:"d"`
		Tag     int    `msgpack:"t"`
		Context int    `msgpack:"c"`
		Data    []byte `msgpack:"x"`
		Later   string `msgpack:"z"`
	}
	type deliverTags struct {
		Req   uint64 `msgpack:"r"`
		Src   int    `msgpack:"s"`
		Tag   int    `msgpack:"t"`
		Data  []byte `msgpack:"x"`
		Later []int  `msgpack:"z"`
	}
	send := Send{Dst: 3, Tag: -1 << 40, Context: ContextCollective, Data: []byte("payload")}
	b, err := msgpack.Marshal(sendTags{send.Dst, send.Tag, send.Context, send.Data, "new field"})
	if err != nil {
		t.Fatal(err)
	}
	var gotSend Send
	if err := msgpack.Unmarshal(b, &gotSend); err != nil || !reflect.DeepEqual(gotSend, send) {
		t.Fatalf("Send from tags: %+v, %v", gotSend, err)
	}
	b, err = msgpack.Marshal(send)
	if err != nil {
		t.Fatal(err)
	}
	var back sendTags
	if err := msgpack.Unmarshal(b, &back); err != nil || back.Dst != 3 || back.Tag != send.Tag || back.Context != ContextCollective || !bytes.Equal(back.Data, send.Data) {
		t.Fatalf("Send to tags: %+v, %v", back, err)
	}

	dl := Deliver{Req: 1 << 63, Src: 7, Tag: 9, Data: []byte{0, 1, 2}}
	b, err = msgpack.Marshal(deliverTags{dl.Req, dl.Src, dl.Tag, dl.Data, []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var gotDeliver Deliver
	if err := msgpack.Unmarshal(b, &gotDeliver); err != nil || !reflect.DeepEqual(gotDeliver, dl) {
		t.Fatalf("Deliver from tags: %+v, %v", gotDeliver, err)
	}
	b, err = msgpack.Marshal(&dl)
	if err != nil {
		t.Fatal(err)
	}
	var dback deliverTags
	if err := msgpack.Unmarshal(b, &dback); err != nil || dback.Req != dl.Req || dback.Src != 7 || dback.Tag != 9 || !bytes.Equal(dback.Data, dl.Data) {
		t.Fatalf("Deliver to tags: %+v, %v", dback, err)
	}

	// A field of the wrong type is an error naming the field.
	b, _ = msgpack.Marshal(map[string]any{"d": "three"})
	if err := msgpack.Unmarshal(b, &gotSend); err == nil || !bytes.Contains([]byte(err.Error()), []byte(`field "d"`)) {
		t.Fatalf("wrong type: %v", err)
	}
}
