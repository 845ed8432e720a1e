package member

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/internal/msgpackcheck"
)

// MaxMetaSize is memberlist's limit on node metadata.
const MaxMetaSize = memberlist.MetaMaxSize

// MaxNameLen bounds a node name (the slice clock's heartbeats carry it
// too: strobe.MaxNameLen is the same).
const MaxNameLen = 128

// The metadata's envelope: [version, type, body], the slice clock's packet
// envelope (package strobe) with its own type number, so that metadata is
// never mistaken for a strobe or a heartbeat, nor they for it.
const (
	metaVersion uint8 = 1
	metaType    uint8 = 3 // strobe.TypeMeta: reserved for this
)

// Meta describes a node to the others. It travels as memberlist node
// metadata, encoded in a versioned envelope, so an agent ignores a member
// whose metadata it cannot read instead of misreading it.
type Meta struct {
	Name       string `msgpack:"n"`  // node name (equals the memberlist name)
	StrobeAddr string `msgpack:"sa"` // UDP host:port for strobes
	// HeartbeatAddr is the UDP host:port of the heartbeat exchange; ""
	// means heartbeats go to StrobeAddr.
	HeartbeatAddr string `msgpack:"ha,omitempty"`
	ControlAddr   string `msgpack:"ca"`  // TCP host:port of the controller ↔ agent control channel
	APIAddr       string `msgpack:"aa"`  // HTTP host:port of the API
	RelayAddr     string `msgpack:"ra"`  // host:port of the message relay (BCS)
	CPUs          int    `msgpack:"cpu"` // processors this node offers
	Controller    bool   `msgpack:"ctl"` // this node runs the controller role
	// Memory is what the node offers jobs, in bytes (its MemTotal less
	// the agent's reserve); 0 means not advertised (no admission by
	// memory on this node).
	Memory int64 `msgpack:"mem,omitempty"`
}

func (m *Meta) validate() error {
	switch {
	case m.Name == "":
		return errors.New("meta without name")
	case len(m.Name) > MaxNameLen:
		return fmt.Errorf("meta name of %d bytes (max %d)", len(m.Name), MaxNameLen)
	case m.CPUs < 0:
		return fmt.Errorf("meta with %d CPUs", m.CPUs)
	case m.Memory < 0:
		return fmt.Errorf("meta with %d bytes of memory", m.Memory)
	}
	return nil
}

// encodeMeta encodes m for memberlist, refusing anything memberlist would
// truncate or reject.
func encodeMeta(m Meta) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("member: node meta: %w", err)
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	err := enc.EncodeArrayLen(3)
	if err == nil {
		err = enc.EncodeUint(uint64(metaVersion))
	}
	if err == nil {
		err = enc.EncodeUint(uint64(metaType))
	}
	if err == nil {
		err = enc.Encode(&m)
	}
	if err != nil {
		return nil, fmt.Errorf("member: node meta: %w", err)
	}
	if buf.Len() > MaxMetaSize {
		return nil, fmt.Errorf("member: node meta of %d bytes exceeds memberlist's %d-byte limit (shorten the addresses or the name)", buf.Len(), MaxMetaSize)
	}
	return buf.Bytes(), nil
}

// decodeMeta reads what encodeMeta wrote. It never panics on arbitrary
// input (memberlist hands over whatever a peer sent).
func decodeMeta(b []byte) (Meta, error) {
	if len(b) > MaxMetaSize {
		return Meta{}, fmt.Errorf("member: node meta of %d bytes (max %d)", len(b), MaxMetaSize)
	}
	if err := msgpackcheck.Check(b); err != nil {
		return Meta{}, fmt.Errorf("member: node meta: %w", err)
	}
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 3 {
		return Meta{}, fmt.Errorf("member: node meta: not an envelope (%d elements, %v)", n, err)
	}
	v, err := dec.DecodeUint()
	if err != nil || v != uint(metaVersion) {
		return Meta{}, fmt.Errorf("member: node meta: version %d (this build speaks %d): %v", v, metaVersion, err)
	}
	t, err := dec.DecodeUint()
	if err != nil || t != uint(metaType) {
		return Meta{}, fmt.Errorf("member: node meta: type %d, want %d: %v", t, metaType, err)
	}
	var m Meta
	if err := dec.Decode(&m); err != nil {
		return Meta{}, fmt.Errorf("member: node meta: %w", err)
	}
	for i := 3; i < n; i++ {
		if err := dec.Skip(); err != nil {
			return Meta{}, fmt.Errorf("member: node meta: envelope extension: %w", err)
		}
	}
	if r.Len() != 0 {
		return Meta{}, fmt.Errorf("member: node meta: %d trailing bytes", r.Len())
	}
	if err := m.validate(); err != nil {
		return Meta{}, fmt.Errorf("member: node meta: %w", err)
	}
	return m, nil
}
