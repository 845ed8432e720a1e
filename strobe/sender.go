package strobe

import (
	"errors"
	"fmt"

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
	t     Transport
	epoch uint64
	log   *zap.Logger
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
// starts (the ticker's deadline; 0 if there is none). The datagram is encoded once and sent
// back to back; the first target rotates with seq so that no agent is
// always the last to hear (the send loop is part of the switch skew). A
// failed send does not stop the others; the errors are joined.
func (s *Sender) Strobe(targets []string, seq uint64, row int, memberEpoch uint64, due int64) (sentMono int64, err error) {
	if seq == 0 {
		return 0, errors.New("strobe: slice numbers start at 1")
	}
	sentMono = mono.Now()
	data, err := Marshal(&Strobe{Epoch: s.epoch, Seq: seq, Row: row, MemberEpoch: memberEpoch, SentMono: sentMono, DueMono: due})
	if err != nil {
		return sentMono, err
	}
	n := len(targets)
	if n == 0 {
		return sentMono, nil
	}
	var errs []error
	first := int(seq % uint64(n))
	for i := range n {
		to := targets[(first+i)%n]
		if err := s.t.Send(to, data); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return sentMono, fmt.Errorf("strobe: slice %d: %d of %d sends failed: %w", seq, len(errs), n, errors.Join(errs...))
	}
	return sentMono, nil
}
