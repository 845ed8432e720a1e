package strobe

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cosched/cosched/clusterkey"
)

// Authenticated strobes and heartbeats (protocol version 2). With a
// cluster key every datagram a node sends is sealed (clusterkey.Seal: a
// header naming the sender and a sequence number, the message, and a
// truncated HMAC-SHA256 of both), and a Follower with the key opens every
// datagram before it decodes it:
//
//   - not sealed, sealed with another key, tampered with or truncated:
//     forged, dropped and counted (Stats.StrobesForged or
//     HeartbeatsForged, by the socket it came to);
//   - sealed right but a sequence number this receiver has accepted from
//     that sender for that message type, or one more than a window
//     (clusterkey.WindowSize) behind the newest: replayed, dropped and
//     counted (StrobesReplayed, HeartbeatsReplayed);
//   - otherwise decoded and handled as an unsealed message is without a
//     key.
//
// Dropped packets change nothing: no row, slice, peer table, reassembly or
// relay cut. The message inside a seal is stamped version 2; unsealed
// packets stay version 1, so a cluster without a key mixes builds as
// before. A build that speaks only version 1 counts sealed packets
// Malformed and never switches: give every agent this build before the key.
// A Follower without a key counts sealed packets Unknown and says so.
//
// Sequence numbers. One Auth per node, shared by its Sender (when it
// leads) and its Follower (forwarded strobes, heartbeats), hands out one
// counter; it starts at the wall clock in nanoseconds and jumps forward to
// the clock whenever the counter has fallen a second behind it. So a
// restarted node, or one that becomes the leader, starts above every
// number it used before (it cannot have sent a packet per nanosecond), and
// between jumps numbers grow by one per packet, which is what lets the
// receiver's 64-packet window absorb reordering. A node whose clock steps
// back by Δ across a restart is dropped as replayed by the receivers that
// remember it for about Δ. Receivers keep one window per socket, sender
// and message type, so strobes and heartbeats never reorder against each
// other, and the strobe path shares no lock with the heartbeat receiver:
// a keyed agent with a heartbeat socket takes only strobes on its strobe
// socket and only heartbeats on the other. A receiver that restarts forgets its
// windows: it accepts, once per sender, one old packet replayed to it,
// which the sequence rules then confine (a strobe of an older epoch is
// superseded by the live controller's next strobe).

// ProtocolVersionSealed is the version stamped on messages inside a
// seal. Unsealed messages carry version 1.
const ProtocolVersionSealed uint8 = 2

// seqResync is how far the sequence counter may fall behind the clock
// before it jumps forward to it.
const seqResync = int64(time.Second)

// Auth is a node's key for the slice clock: it seals what the node sends
// and opens what it receives. It is safe for concurrent use. A nil *Auth
// means no key: messages go unsealed and unsealed messages are accepted.
type Auth struct {
	key    *clusterkey.Key
	sender uint64
	seq    atomic.Uint64
	now    func() int64 // wall clock in ns
}

// NewAuth returns the Auth of the node named name (its sender id is
// clusterkey.SenderID(name)). It returns nil, meaning no authentication,
// when key is nil.
func NewAuth(key *clusterkey.Key, name string) *Auth {
	if key == nil {
		return nil
	}
	return newAuthClock(key, name, func() int64 { return time.Now().UnixNano() })
}

func newAuthClock(key *clusterkey.Key, name string, now func() int64) *Auth {
	a := &Auth{key: key, sender: clusterkey.SenderID(name), now: now}
	a.seq.Store(uint64(now()))
	return a
}

// nextSeq returns a sequence number never returned before by this Auth
// nor, given a clock that does not step back, by an earlier Auth of the
// same node.
func (a *Auth) nextSeq() uint64 {
	now := a.now()
	for {
		old := a.seq.Load()
		next := old + 1
		if now > int64(old)+seqResync {
			next = uint64(now)
		}
		if a.seq.CompareAndSwap(old, next) {
			return next
		}
	}
}

// encode is Marshal for a node with Auth a: sealed when a is set.
func (a *Auth) encode(m Message) ([]byte, error) {
	if a == nil {
		return Marshal(m)
	}
	plain, err := marshal(m, ProtocolVersionSealed)
	if err != nil {
		return nil, err
	}
	b, err := a.key.Seal(make([]byte, 0, len(plain)+clusterkey.Overhead), clusterkey.Envelope{Sender: a.sender, Seq: a.nextSeq()}, plain)
	if err != nil {
		return nil, fmt.Errorf("strobe: seal %v: %w", m.MsgType(), err)
	}
	return b, nil
}

// Errors of opening a packet (wrapped; test with errors.Is).
var (
	// ErrForged: not sealed with this cluster's key (or not sealed at
	// all, or damaged).
	ErrForged = errors.New("forged or unauthenticated packet")
	// ErrReplayed: sealed right, but its sequence number was seen or is
	// too old.
	ErrReplayed = errors.New("replayed packet")
)

// sealedMagic starts every sealed packet; no unsealed packet (a msgpack
// array) starts with it.
const sealedMagic = "cK"

// replayKey names one replay window: a sender and a message type.
type replayKey struct {
	sender uint64
	typ    MsgType
}

// maxReplayWindows bounds a receiver's windows. Only holders of the key
// create windows, so the bound is never reached by a forger; past it an
// arbitrary window is forgotten.
const maxReplayWindows = 2 * maxTrackedPeers

// replayWindows are one receiver's windows. Not safe for concurrent use.
type replayWindows map[replayKey]*clusterkey.ReplayWindow

// open authenticates and decodes pkt for a receiver with Auth a (nil: no
// key, pkt is decoded as it is). Errors wrap ErrForged, ErrReplayed (with
// the message, for its type) or Unmarshal's kinds, ErrUnknownType for a
// message of another type than only (if only is set). A replay is checked
// only after the MAC, so a forger cannot advance a window, and after the
// type, so a packet sent to the wrong socket cannot spend a number.
//
// A strobe is decoded into buf (nil: a new one), valid until buf's next use.
func (a *Auth) open(pkt []byte, windows replayWindows, only MsgType, buf *decodeBuf) (Message, error) {
	if a == nil {
		if len(pkt) >= len(sealedMagic) && string(pkt[:len(sealedMagic)]) == sealedMagic {
			return nil, fmt.Errorf("strobe: unmarshal: %w: a sealed packet (protocol %d), and this node has no cluster key", ErrVersion, ProtocolVersionSealed)
		}
		m, err := unmarshal(pkt, protocolVersionPlain, buf)
		if err == nil && only != 0 && m.MsgType() != only {
			return nil, fmt.Errorf("%w for this socket: %v", ErrUnknownType, m.MsgType())
		}
		return m, err
	}
	if len(pkt) > MaxPacketSize+clusterkey.Overhead {
		return nil, fmt.Errorf("strobe: open: %w: %d bytes (max %d)", ErrForged, len(pkt), MaxPacketSize+clusterkey.Overhead)
	}
	var env clusterkey.Envelope
	var payload []byte
	var err error
	if buf != nil {
		if buf.opener == nil || buf.opener.Key() != a.key {
			buf.opener = a.key.NewOpener()
		}
		env, payload, err = buf.opener.Open(pkt)
	} else {
		env, payload, err = a.key.Open(pkt)
	}
	if err != nil {
		if errors.Is(err, clusterkey.ErrNotSealed) && len(pkt) > 0 && pkt[0]&0xf0 == 0x90 { // a msgpack array: an unsealed message
			return nil, fmt.Errorf("strobe: open: %w: not sealed (does the sender have the cluster key?)", ErrForged)
		}
		return nil, fmt.Errorf("strobe: open: %w: %v", ErrForged, err)
	}
	m, err := unmarshal(payload, ProtocolVersionSealed, buf)
	if err != nil {
		return nil, err // sealed with our key: a bug or a newer build, not a forgery
	}
	if only != 0 && m.MsgType() != only {
		return nil, fmt.Errorf("%w for this socket: %v", ErrUnknownType, m.MsgType())
	}
	k := replayKey{env.Sender, m.MsgType()}
	w := windows[k]
	if w == nil {
		if len(windows) >= maxReplayWindows {
			for old := range windows {
				delete(windows, old)
				break
			}
		}
		w = new(clusterkey.ReplayWindow)
		windows[k] = w
	}
	if !w.Accept(env.Seq) {
		return m, fmt.Errorf("strobe: open: %w: %v %d from sender %016x", ErrReplayed, m.MsgType(), env.Seq, env.Sender)
	}
	return m, nil
}
