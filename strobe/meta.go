package strobe

import (
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// MaxMetaSize is memberlist's limit on node metadata.
const MaxMetaSize = memberlist.MetaMaxSize

// Meta describes a node to the others. It travels as memberlist node
// metadata, encoded like a packet (envelope version and TypeMeta), so an
// agent ignores a member whose metadata it cannot read instead of
// misreading it.
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

// MsgType implements Message.
func (*Meta) MsgType() MsgType { return TypeMeta }

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
	b, err := Marshal(&m)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMetaSize {
		return nil, fmt.Errorf("strobe: node meta of %d bytes exceeds memberlist's %d-byte limit (shorten the addresses or the name)", len(b), MaxMetaSize)
	}
	return b, nil
}

func decodeMeta(b []byte) (Meta, error) {
	msg, err := Unmarshal(b)
	if err != nil {
		return Meta{}, err
	}
	m, ok := msg.(*Meta)
	if !ok {
		return Meta{}, fmt.Errorf("strobe: node meta: %w: got a %v", ErrUnknownType, msg.MsgType())
	}
	return *m, nil
}
