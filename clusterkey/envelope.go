package clusterkey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// A sealed packet is, in order:
//
//	magic    2 bytes  "cK"
//	version  1 byte   2
//	sender   8 bytes  the sender's id (big endian)
//	seq      8 bytes  the sender's sequence number, increasing per packet
//	payload  the rest up to the MAC
//	mac      16 bytes HMAC-SHA256 of everything before it, truncated
//
// The MAC covers the header, so a packet cannot be replayed under another
// sender or sequence. Confidentiality is not a goal: strobes and
// heartbeats carry no secrets, only the right to change state. Version 1
// (a 4-byte sender) was never sent: receivers key their replay windows by
// sender, and 32-bit ids hashed from node names collide in large clusters.
const (
	envelopeMagic   = "cK"
	envelopeVersion = 2
	envelopeHeader  = 2 + 1 + 8 + 8
	envelopeMACSize = 16
	// Overhead is how many bytes Seal adds to a payload.
	Overhead = envelopeHeader + envelopeMACSize
	// MaxPacket bounds a sealed packet (a UDP datagram).
	MaxPacket = 65507
)

var envelopeLabel = []byte("cosched envelope v1")

// Envelope is an opened packet's header.
type Envelope struct {
	Sender uint64 // who sealed it (e.g. SenderID of the node's name)
	Seq    uint64 // the sender's sequence number
}

// SenderID is the conventional sender id of a named sender (a node): the
// 64-bit FNV-1a hash of its name, so that ids need no coordination and two
// of a cluster's names collide with negligible probability.
func SenderID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// Seal appends to dst the packet carrying payload from sender with
// sequence number seq. Senders must never reuse a sequence number with
// the same key (a restarted sender starts above its previous ones, for
// instance from the clock in nanoseconds).
func (k *Key) Seal(dst []byte, e Envelope, payload []byte) ([]byte, error) {
	if len(payload) > MaxPacket-Overhead {
		return dst, fmt.Errorf("payload of %d bytes: more than %d fit in a packet", len(payload), MaxPacket-Overhead)
	}
	start := len(dst)
	dst = append(dst, envelopeMagic...)
	dst = append(dst, envelopeVersion)
	dst = binary.BigEndian.AppendUint64(dst, e.Sender)
	dst = binary.BigEndian.AppendUint64(dst, e.Seq)
	dst = append(dst, payload...)
	var sum [sha256.Size]byte
	return append(dst, k.pooledMAC(sum[:0], envelopeLabel, dst[start:])[:envelopeMACSize]...), nil
}

// ErrNotSealed reports a packet that is not a sealed packet at all
// (ErrForged: one whose MAC is wrong).
var ErrNotSealed = errors.New("not a sealed packet")

// Open checks a packet's MAC and returns its header and payload (a slice
// of pkt). It does not check for replays: see ReplayWindow.
func (k *Key) Open(pkt []byte) (Envelope, []byte, error) { return k.open(pkt, nil) }

// Opener opens packets with a keyed MAC state of its own: for one receive
// loop (not safe for concurrent use), which then allocates nothing, where
// Key.Open takes its state from a pool that may be emptied (by a garbage
// collection, or at random under the race detector).
type Opener struct {
	k     *Key
	state macState
}

// NewOpener returns an Opener for k.
func (k *Key) NewOpener() *Opener {
	return &Opener{k: k, state: macState{h: hmac.New(sha256.New, k.b[:])}}
}

// Open is Key.Open with o's own MAC state.
func (o *Opener) Open(pkt []byte) (Envelope, []byte, error) { return o.k.open(pkt, &o.state) }

// Key is the key o opens with.
func (o *Opener) Key() *Key { return o.k }

// open is Open with state's MAC (nil: the pool's).
func (k *Key) open(pkt []byte, state *macState) (Envelope, []byte, error) {
	var e Envelope
	switch {
	case len(pkt) > MaxPacket:
		return e, nil, fmt.Errorf("%w: %d bytes, more than %d", ErrNotSealed, len(pkt), MaxPacket)
	case len(pkt) < Overhead:
		return e, nil, fmt.Errorf("%w: %d bytes, fewer than %d", ErrNotSealed, len(pkt), Overhead)
	case string(pkt[:2]) != envelopeMagic:
		return e, nil, fmt.Errorf("%w: wrong magic", ErrNotSealed)
	case pkt[2] != envelopeVersion:
		return e, nil, fmt.Errorf("%w: version %d, want %d", ErrNotSealed, pkt[2], envelopeVersion)
	}
	body, sum := pkt[:len(pkt)-envelopeMACSize], pkt[len(pkt)-envelopeMACSize:]
	var want [sha256.Size]byte
	var got []byte
	if state != nil {
		got = state.mac(want[:0], envelopeLabel, body)
	} else {
		got = k.pooledMAC(want[:0], envelopeLabel, body)
	}
	if !hmac.Equal(got[:envelopeMACSize], sum) {
		return e, nil, ErrForged
	}
	e.Sender = binary.BigEndian.Uint64(pkt[3:])
	e.Seq = binary.BigEndian.Uint64(pkt[11:])
	return e, body[envelopeHeader:], nil
}

// WindowSize is how far behind the newest sequence number a ReplayWindow
// still accepts a packet that has not been seen (reordering tolerance).
const WindowSize = 64

// ReplayWindow accepts each sequence number of one sender at most once,
// and none more than WindowSize behind the newest accepted (RFC 4303's
// anti-replay window). Its zero value accepts any first packet. It is not
// safe for concurrent use.
type ReplayWindow struct {
	top    uint64 // highest accepted sequence number
	seen   uint64 // bit i: top-i was accepted
	inited bool
}

// Accept reports whether seq is new, and records it if so. Call it only
// for packets whose MAC was verified, or a forger could advance the window.
func (w *ReplayWindow) Accept(seq uint64) bool {
	switch {
	case !w.inited:
		w.top, w.seen, w.inited = seq, 1, true
		return true
	case seq > w.top:
		shift := seq - w.top
		if shift >= WindowSize {
			w.seen = 1
		} else {
			w.seen = w.seen<<shift | 1
		}
		w.top = seq
		return true
	}
	back := w.top - seq
	if back >= WindowSize {
		return false
	}
	bit := uint64(1) << back
	if w.seen&bit != 0 {
		return false
	}
	w.seen |= bit
	return true
}
