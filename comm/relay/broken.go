package relay

import (
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
)

// A broken channel (docs/mpi.md, "A broken channel"): a cross-node
// channel's TCP connection can break under two live ranks (a network
// fault). Each rank then says Broken with how many bytes of its peer's
// stream it read; the relays carry it to the peer, which resends the rest
// through the relays. The relays keep nothing of it but, for a rank not
// connected at the moment (its connection to this relay is being
// resumed), the words for its next Welcome; a word lost with a relay's
// restart is said again by its rank (it resumes, or hears Resend). Both
// relays strike the pair from their ranks' channel peers (chPeers) as
// the words pass, before any of the pair's relay-path messages: such a
// message is then no sign of a revoke (holdLocked).

// pairBroken is a Broken between relays: rank Src's channel to rank Dst
// of job Job broke; Src read Read bytes of Dst's stream.
type pairBroken struct {
	Job   int64  `msgpack:"j"`
	Src   int    `msgpack:"s"`
	Dst   int    `msgpack:"d"`
	Read  uint64 `msgpack:"n"`
	Reply bool   `msgpack:"w"`
}

// brokenLocked carries rs's Broken to its peer's rank, here or on the
// peer's node.
func (r *Relay) brokenLocked(rs *rankState, b comm.Broken) error {
	j := rs.job
	if b.Peer < 0 || b.Peer >= j.size || b.Peer == rs.rank {
		return fmt.Errorf("broken channel to rank %d of a job of %d (rank %d)", b.Peer, j.size, rs.rank)
	}
	if b.Reply {
		r.log.Info("a channel's connection broke: the pair goes on through the relays", zap.Int64("job", j.id), zap.Int("rank", rs.rank), zap.Int("peer", b.Peer))
	}
	rs.chPeers = slices.DeleteFunc(rs.chPeers, func(p int) bool { return p == b.Peer })
	m := pairBroken{Job: j.id, Src: rs.rank, Dst: b.Peer, Read: b.Read, Reply: b.Reply}
	if node := j.nodes[b.Peer]; node != r.cfg.Node {
		r.sendPeerLocked(node, frameBroken, &m)
		return nil
	}
	r.brokenToRankLocked(j, m)
	return nil
}

// brokenToRankLocked tells rank m.Dst, if it is here, what its peer said.
func (r *Relay) brokenToRankLocked(j *job, m pairBroken) {
	rs := j.local[m.Dst]
	if rs == nil || m.Src < 0 || m.Src >= j.size || m.Src == m.Dst {
		return
	}
	// From now on the pair's messages take the relays: not a sign that
	// the peer's relay took its channels back (holdLocked).
	rs.chPeers = slices.DeleteFunc(rs.chPeers, func(p int) bool { return p == m.Src })
	b := comm.Broken{Peer: m.Src, Read: m.Read, Reply: m.Reply}
	if rs.conn == nil || !rs.inited {
		// one word per peer (the last; a wanted answer stays wanted): a
		// rank that says it again and again holds no more here
		if i := slices.IndexFunc(rs.broken, func(o comm.Broken) bool { return o.Peer == b.Peer }); i >= 0 {
			b.Reply = b.Reply || rs.broken[i].Reply
			rs.broken[i] = b
			return
		}
		rs.broken = append(rs.broken, b)
		return
	}
	rs.conn.sendLocked(r, comm.FrameBroken, &b, payload{})
}

// brokenPendingLocked gives a rank that resumed what came for it
// meanwhile.
func (r *Relay) brokenPendingLocked(rs *rankState) {
	if rs.conn == nil {
		return
	}
	for _, b := range rs.broken {
		rs.conn.sendLocked(r, comm.FrameBroken, &b, payload{})
	}
	rs.broken = nil
}
