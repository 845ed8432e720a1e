package relay

import (
	"slices"

	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
)

// Taking channels back (docs/mpi.md, "Taking channels back"): a relay
// switched to bcs while a job runs tells each of its ranks with channels
// to revoke them (comm.Revoke). Each rank writes an end marker on each
// channel and sends on through the relay; until it has read a peer's
// marker it matches that peer's messages on the channel, and the relay
// holds what the peer sent it through the relay (acceptLocked), so that
// the pair's order holds. comm.Drained releases them.

// revokeAllLocked tells every rank granted channels to revoke them.
func (r *Relay) revokeAllLocked() {
	for _, j := range r.jobs {
		for _, rs := range j.local {
			r.revokeLocked(rs)
		}
	}
}

// revokeLocked tells rs to revoke its channels, if it has any not
// revoked yet and takes Revoke, and holds its peers' relay-path messages
// from now on until it has drained their channels.
//
// A rank not connected (its connection broke) is told when it resumes
// (welcomeLocked: Revoke again while it drains, in case the first or its
// Drained died with the connection; both are idempotent).
func (r *Relay) revokeLocked(rs *rankState) {
	if !rs.revokable || len(rs.chPeers) == 0 {
		return
	}
	if rs.drainFrom == nil {
		rs.drainFrom = map[int]bool{}
	}
	for _, p := range rs.chPeers {
		rs.drainFrom[p] = true
	}
	r.log.Info("channels taken back: the relay buffers the job's messages", zap.Int64("job", rs.job.id), zap.Int("rank", rs.rank), zap.Ints("peers", rs.chPeers))
	rs.chPeers = nil
	if rs.conn != nil {
		rs.conn.sendLocked(r, comm.FrameRevoke, &comm.Revoke{}, payload{})
	}
}

// holdLocked says whether m, for rs, must wait until rs has drained its
// sender's channel. A relay-path message from a peer rs has a channel to
// says that peer took it back (its relay switched first): rs is told to
// as well, and the message held.
func (r *Relay) holdLocked(rs *rankState, m peerMsg) bool {
	if !rs.drainFrom[m.Src] && rs.revokable && slices.Contains(rs.chPeers, m.Src) {
		r.revokeLocked(rs)
	}
	return rs.drainFrom[m.Src]
}

// drainedLocked: rs has read peer's channel to its end; what the relay
// held from peer goes to its receives, in order.
func (r *Relay) drainedLocked(rs *rankState, peer int) {
	if !rs.drainFrom[peer] {
		return // not draining it (a repeat, or a peer never granted): nothing held
	}
	delete(rs.drainFrom, peer)
	r.releaseHeldLocked(rs, peer)
}

// resumedChannelsLocked takes what a resumed Hello says of rs's channels
// (comm.Hello.Draining, ChannelPeers): a relay that restarted while rs
// drained a channel holds that peer's relay-path messages again, and can
// take back the channels rs still has. The rank's word replaces what
// this relay knew: a peer it no longer drains (its Drained died with the
// connection) is returned, for the caller to release what was held from
// it after the Welcome.
func (r *Relay) resumedChannelsLocked(rs *rankState, h comm.Hello) (release []int) {
	rs.revokable = true
	ok := func(p int) bool { return p >= 0 && p < rs.job.size && p != rs.rank }
	rs.chPeers = slices.DeleteFunc(slices.Clone(h.ChannelPeers), func(p int) bool { return !ok(p) })
	old := rs.drainFrom
	rs.drainFrom = nil
	for _, p := range h.Draining {
		if ok(p) {
			if rs.drainFrom == nil {
				rs.drainFrom = map[int]bool{}
			}
			rs.drainFrom[p] = true
		}
	}
	for p := range old {
		if !rs.drainFrom[p] {
			release = append(release, p)
		}
	}
	return release
}

// releaseHeldLocked: what was held for rs from peer goes to its receives,
// in order.
func (r *Relay) releaseHeldLocked(rs *rankState, peer int) {
	held := rs.held
	rs.held = nil
	for _, m := range held {
		if m.Src == peer {
			r.acceptLocked(rs, m) // peer no longer drained: accepted
		} else {
			rs.held = append(rs.held, m)
		}
	}
}
