package strobe

import (
	"errors"
	"fmt"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/mono"
)

// Sender is the controller's side of the slice clock: it only sends. The
// controller's loop owns the period (see Ticker), the sequence numbers and
// the rows (from the scheduler core); a Sender turns each decision into
// one datagram per agent. It is safe for concurrent use.
//
// The controller's own agent may share the Sender's transport with its
// Follower: it strobes itself like any agent, and the heartbeats every
// agent sends to the strobe's source then arrive at that Follower.
type Sender struct {
	t      Transport
	epoch  uint64
	log    *zap.Logger
	fanout atomic.Int32 // 0: direct; k: a k-ary tree (fanout.go)
	auth   atomic.Pointer[Auth]
	group  atomic.Pointer[string]
}

// SetMulticast makes every strobe one datagram to group (an IPv4
// multicast address and port that every agent's Follower listens to:
// FollowerConfig.Multicast) instead of one per target or a tree; "" goes
// back to unicast. The network delivers it to every member at once, as
// Quadrics' hardware multicast did for STORM; a lost copy is a gap at
// that agent, as a lost unicast strobe is. It takes effect at the next
// Strobe; every agent must have joined the group.
func (s *Sender) SetMulticast(group string) {
	if group == "" {
		s.group.Store(nil)
		return
	}
	s.group.Store(&group)
}

// SetAuth seals every strobe sent from now on with a (nil: unsealed). Give
// it the node's one Auth, the one its Follower has (auth.go).
func (s *Sender) SetAuth(a *Auth) { s.auth.Store(a) }

// SetFanout chooses how strobes reach the targets: k = 0 sends one
// datagram to each (direct); k ≥ 1 sends to k agents, which forward along
// a k-ary tree (fanout.go), so the last agent hears it after about
// log_k N hops instead of N back-to-back sends. A cluster of at most k
// targets is strobed directly either way. It takes effect at the next
// Strobe; every agent must be of a build that forwards.
func (s *Sender) SetFanout(k int) {
	s.fanout.Store(int32(min(max(k, 0), 255)))
}

// NewSender returns a Sender for controller incarnation epoch. Epochs must
// increase across controller restarts (e.g. the wall clock in ns at
// start): agents ignore strobes from an epoch older than the newest they
// have seen.
func NewSender(t Transport, epoch uint64, log *zap.Logger) *Sender {
	if log == nil {
		log = zap.NewNop()
	}
	return &Sender{t: t, epoch: epoch, log: log}
}

// Epoch returns the controller incarnation this Sender stamps.
func (s *Sender) Epoch() uint64 { return s.epoch }

// Strobe sends Strobe{Epoch, seq, row, memberEpoch, SentMono, due} to
// every target and returns SentMono; due is the slice boundary the strobe
// starts (the ticker's deadline; 0 if there is none). Directly (fanout
// 0), the datagram is encoded once and sent back to back; along the tree,
// to the tree's first level, each with its subtree. Either way the target
// order rotates with seq so that no agent is always the last to hear (the
// send loop is part of the switch skew) or always the same inner node. A
// failed send does not stop the others; the errors are joined.
func (s *Sender) Strobe(targets []string, seq uint64, row int, memberEpoch uint64, due int64) (sentMono int64, err error) {
	if seq == 0 {
		return 0, errors.New("strobe: slice numbers start at 1")
	}
	sentMono = mono.Now()
	st := Strobe{Epoch: s.epoch, Seq: seq, Row: row, MemberEpoch: memberEpoch, SentMono: sentMono, DueMono: due}
	auth := s.auth.Load()
	data, err := auth.encode(&st)
	if err != nil {
		return sentMono, err
	}
	n := len(targets)
	if n == 0 {
		return sentMono, nil
	}
	var errs []error
	sends := 0
	send := func(to string, data []byte) {
		sends++
		if err := s.t.Send(to, data); err != nil {
			errs = append(errs, err)
		}
	}
	if g := s.group.Load(); g != nil {
		send(*g, data)
	} else if k := int(s.fanout.Load()); k > 0 && n > k {
		forwardStrobe(st, k, treeOrder(targets, k, seq), data, send, auth, s.log)
	} else {
		first := int(seq % uint64(n))
		for i := range n {
			send(targets[(first+i)%n], data)
		}
	}
	if len(errs) > 0 {
		return sentMono, fmt.Errorf("strobe: slice %d: %d of %d sends failed: %w", seq, len(errs), sends, errors.Join(errs...))
	}
	return sentMono, nil
}
