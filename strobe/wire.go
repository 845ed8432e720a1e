package strobe

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/internal/msgpackcheck"
)

// Protocol versions this build speaks. A message carries its version; one
// outside [ProtocolVersionMin, ProtocolVersion] is dropped and counted.
// Adding an optional field to a message does not need a new version
// (decoders ignore unknown keys and leave missing ones zero); changing the
// meaning or the encoding of an existing field does. Version 2 is a
// version-1 message sealed with the cluster key (auth.go): Marshal writes
// and Unmarshal reads version 1 (unsealed), a node with a key seals and
// opens version 2 and nothing else.
const (
	ProtocolVersionMin uint8 = 1
	ProtocolVersion    uint8 = ProtocolVersionSealed
	// protocolVersionPlain is the version of an unsealed message.
	protocolVersionPlain uint8 = 1
)

// MsgType numbers the message kinds. The numbers are part of the protocol:
// append new types at the end, never renumber or reuse one.
type MsgType uint8

const (
	typeInvalid   MsgType = 0 // never sent: catches zeroed packets
	TypeStrobe    MsgType = 1 // controller → agents, once per slice
	TypeHeartbeat MsgType = 2 // agent → every peer and the controller, after applying a strobe
	TypeMeta      MsgType = 3 // reserved: membership metadata (package member), never on the strobe socket
)

func (t MsgType) String() string {
	switch t {
	case TypeStrobe:
		return "strobe"
	case TypeHeartbeat:
		return "heartbeat"
	case TypeMeta:
		return "meta"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// MaxPacketSize bounds an encoded message. Strobes are under 100 bytes.
// Heartbeats carry BCS's per-slice control data (Heartbeat.Data, about
// 30 bytes per destination node with short names), so on clusters of more
// than a few dozen nodes a heartbeat exceeds an Ethernet MTU and is
// fragmented: a lost fragment loses it, which delays that slice's
// transfer by the relay's timeout, never its correctness.
const MaxPacketSize = 8192

// MaxNameLen bounds a node name, which every heartbeat carries.
const MaxNameLen = 128

// Errors returned by Unmarshal (wrapped; test with errors.Is).
var (
	ErrMalformed   = errors.New("malformed packet")
	ErrVersion     = errors.New("unsupported protocol version")
	ErrUnknownType = errors.New("unknown message type")
	ErrTooLarge    = errors.New("packet too large")
)

// Message is one of *Strobe or *Heartbeat.
type Message interface {
	MsgType() MsgType
	validate() error
}

// Strobe starts slice Seq: every agent switches to Row. Keys are short
// because the strobe is sent N times per slice.
type Strobe struct {
	Epoch       uint64 `msgpack:"e"`           // controller incarnation; increases across controller restarts
	Seq         uint64 `msgpack:"s"`           // slice number k, from 1, +1 per slice
	Row         int    `msgpack:"r"`           // matrix row to run in slice k
	MemberEpoch uint64 `msgpack:"me"`          // changes whenever the controller's member list changes
	SentMono    int64  `msgpack:"t"`           // mono.Now() at the controller when sent
	DueMono     int64  `msgpack:"d,omitempty"` // the slice boundary it starts, by the controller's clock (0: unknown)
	// The fan-out tree (fanout.go), appended in version 1: an agent that
	// receives a Forward list forwards the strobe to its Fanout children
	// before switching. Agents of older builds ignore both keys and do not
	// forward, so the controller enables the tree (--strobe-fanout) only
	// when every agent has this build.
	Fanout  uint8    `msgpack:"k,omitempty"`  // the tree's arity (≥1 when Forward is set)
	Forward []string `msgpack:"fw,omitempty"` // the receiver's subtree, breadth-first, without the receiver
}

// MaxAddrLen bounds one address in a strobe's Forward list.
const MaxAddrLen = 255

// MsgType implements Message.
func (*Strobe) MsgType() MsgType { return TypeStrobe }

func (s *Strobe) validate() error {
	if s.Seq == 0 {
		return errors.New("strobe seq 0 (slices count from 1)")
	}
	if len(s.Forward) > 0 && s.Fanout == 0 {
		return errors.New("strobe with a forward list and fanout 0")
	}
	for i, a := range s.Forward {
		if a == "" || len(a) > MaxAddrLen {
			return fmt.Errorf("strobe forward address %d of %d bytes (1–%d)", i, len(a), MaxAddrLen)
		}
	}
	return nil
}

// Heartbeat is an agent's answer to a strobe, sent to every peer and the
// controller (the total exchange). BCS adds its per-slice control data as
// new fields with new keys; keep keys short and never reuse one.
type Heartbeat struct {
	From         string `msgpack:"f"`           // sender's node name
	Epoch        uint64 `msgpack:"e"`           // epoch of the strobe it answers
	Seq          uint64 `msgpack:"s"`           // seq of the strobe it answers
	RecvMono     int64  `msgpack:"rt"`          // when the agent received the strobe
	SwitchedMono int64  `msgpack:"wt"`          // when its switch completed
	SwitchCost   int64  `msgpack:"wc"`          // ns spent stopping and continuing processes
	Lost         uint64 `msgpack:"lo"`          // running count of strobes never received
	Late         uint64 `msgpack:"la"`          // running count of late or duplicate strobes
	Data         []byte `msgpack:"d,omitempty"` // the relay's control data for the slice (BCS), opaque here
	// A heartbeat whose Data does not fit in one packet is split
	// (appended in version 1; splitHeartbeat): Parts datagrams, each with
	// every field above and the Part-th piece of Data. 0 or 1 Parts: whole.
	Part  uint16 `msgpack:"pi,omitempty"`
	Parts uint16 `msgpack:"pn,omitempty"`
}

// MaxHeartbeatParts bounds a split heartbeat: its Data is at most about
// MaxHeartbeatParts × MaxPacketSize bytes (512 KB).
const MaxHeartbeatParts = 64

// MsgType implements Message.
func (*Heartbeat) MsgType() MsgType { return TypeHeartbeat }

func (h *Heartbeat) validate() error {
	switch {
	case h.From == "":
		return errors.New("heartbeat without sender")
	case len(h.From) > MaxNameLen:
		return fmt.Errorf("heartbeat sender name of %d bytes (max %d)", len(h.From), MaxNameLen)
	case h.Seq == 0:
		return errors.New("heartbeat for seq 0")
	case h.Parts > MaxHeartbeatParts:
		return fmt.Errorf("heartbeat in %d parts (max %d)", h.Parts, MaxHeartbeatParts)
	case h.Parts > 0 && h.Part >= h.Parts || h.Parts == 0 && h.Part > 0:
		return fmt.Errorf("heartbeat part %d of %d", h.Part, h.Parts)
	}
	return nil
}

// Marshal encodes m, unsealed, in the envelope [version, type, body]. The
// body is a msgpack map keyed by the struct tags.
func Marshal(m Message) ([]byte, error) { return marshal(m, protocolVersionPlain) }

func marshal(m Message, version uint8) ([]byte, error) {
	if m == nil {
		return nil, errors.New("strobe: marshal nil message")
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("strobe: marshal %v: %w", m.MsgType(), err)
	}
	var buf bytes.Buffer
	buf.Grow(128)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	enc.UseCompactInts(true)
	err := enc.EncodeArrayLen(3)
	if err == nil {
		err = enc.EncodeUint(uint64(version))
	}
	if err == nil {
		err = enc.EncodeUint(uint64(m.MsgType()))
	}
	if err == nil {
		err = enc.Encode(m)
	}
	if err != nil {
		return nil, fmt.Errorf("strobe: marshal %v: %w", m.MsgType(), err)
	}
	if buf.Len() > MaxPacketSize {
		return nil, fmt.Errorf("strobe: marshal %v: %w: %d bytes (max %d)", m.MsgType(), ErrTooLarge, buf.Len(), MaxPacketSize)
	}
	return buf.Bytes(), nil
}

// Unmarshal decodes one unsealed packet (version 1). It never panics on arbitrary input; errors
// wrap ErrMalformed, ErrVersion, ErrUnknownType or ErrTooLarge. The
// envelope may carry more than three elements (reserved for additions);
// they are skipped.
func Unmarshal(b []byte) (Message, error) { return unmarshal(b, protocolVersionPlain, nil) }

// decodeBuf is one receive loop's decoding state, reused packet after
// packet so that opening a strobe on the real-time path allocates nothing
// (an allocation there can start a garbage collection, whose pauses the
// switch then waits out): the reader over the packet, and the Strobe a
// strobe is decoded into, valid until the next packet.
type decodeBuf struct {
	r      bytes.Reader
	strobe Strobe
	// Its own decoder and MAC state rather than pooled ones: a pool may
	// be emptied (a garbage collection; at random under the race
	// detector), and refilling it allocates.
	dec    *msgpack.Decoder
	opener *clusterkey.Opener
}

// unmarshal is Unmarshal of a message of the given version: 1 unsealed,
// 2 inside a seal (auth.go).
// A Strobe is decoded into buf when buf is not nil.
func unmarshal(b []byte, version uint8, buf *decodeBuf) (Message, error) {
	if len(b) > MaxPacketSize {
		return nil, fmt.Errorf("strobe: unmarshal: %w: %d bytes (max %d)", ErrTooLarge, len(b), MaxPacketSize)
	}
	if err := msgpackcheck.Check(b); err != nil {
		return nil, malformed("packet", err)
	}
	var dec *msgpack.Decoder
	if buf == nil {
		buf = new(decodeBuf)
		dec = msgpack.GetDecoder()
		defer msgpack.PutDecoder(dec)
	} else if buf.dec == nil {
		buf.dec = msgpack.NewDecoder(nil)
	}
	if dec == nil {
		dec = buf.dec
	}
	r := &buf.r
	r.Reset(b)
	dec.Reset(r)

	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, malformed("envelope", err)
	}
	if n < 3 {
		return nil, fmt.Errorf("strobe: unmarshal: %w: envelope of %d elements", ErrMalformed, n)
	}
	v, err := dec.DecodeUint()
	if err != nil {
		return nil, malformed("version", err)
	}
	if v != uint(version) {
		if version == protocolVersionPlain && v == uint(ProtocolVersionSealed) {
			return nil, fmt.Errorf("strobe: unmarshal: %w: %d outside a seal (this build speaks %d unsealed, %d sealed)", ErrVersion, v, protocolVersionPlain, ProtocolVersionSealed)
		}
		return nil, fmt.Errorf("strobe: unmarshal: %w: %d (this build speaks %d unsealed, %d sealed)", ErrVersion, v, protocolVersionPlain, ProtocolVersionSealed)
	}
	t, err := dec.DecodeUint()
	if err != nil {
		return nil, malformed("type", err)
	}
	var m Message
	if t > 0xff { // MsgType(t) would wrap onto a known type
		return nil, fmt.Errorf("strobe: unmarshal: %w: %d", ErrUnknownType, t)
	}
	switch MsgType(t) {
	case TypeStrobe:
		buf.strobe = Strobe{} // nothing of the last one's (its Forward) is reused
		m = &buf.strobe
	case TypeHeartbeat:
		m = new(Heartbeat)
	default:
		return nil, fmt.Errorf("strobe: unmarshal: %w: %d", ErrUnknownType, t)
	}
	if err := dec.Decode(m); err != nil {
		return nil, malformed(MsgType(t).String(), err)
	}
	for i := 3; i < n; i++ {
		if err := dec.Skip(); err != nil {
			return nil, malformed("envelope extension", err)
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("strobe: unmarshal: %w: %d trailing bytes", ErrMalformed, r.Len())
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("strobe: unmarshal: %w: %v", ErrMalformed, err)
	}
	return m, nil
}

func malformed(what string, err error) error {
	return fmt.Errorf("strobe: unmarshal: %w: %s: %v", ErrMalformed, what, err)
}
