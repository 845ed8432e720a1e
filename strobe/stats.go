package strobe

import (
	"maps"
	"slices"
)

// Stats is a snapshot of a Follower.
type Stats struct {
	Epoch       uint64 `json:"epoch"`        // current controller epoch (0 before the first strobe)
	FirstSeq    uint64 `json:"first_seq"`    // first slice applied in this epoch (a late joiner does not count earlier slices as lost)
	LastSeq     uint64 `json:"last_seq"`     // last slice applied
	Row         int    `json:"row"`          // row of the last slice applied
	MemberEpoch uint64 `json:"member_epoch"` // member epoch of the last strobe applied

	Applied   uint64 `json:"applied"`   // strobes applied (Switch called)
	Lost      uint64 `json:"lost"`      // strobes never received: gaps in Seq within an epoch
	Late      uint64 `json:"late"`      // strobes with Seq ≤ the last applied: reordered or duplicated, dropped
	Stale     uint64 `json:"stale"`     // strobes from an older epoch, dropped
	Malformed uint64 `json:"malformed"` // packets that did not decode, dropped
	Unknown   uint64 `json:"unknown"`   // packets of an unknown version or type (or a type not meant for this socket), dropped
	Epochs    uint64 `json:"epochs"`    // controller epoch changes seen after the first

	// With a key (FollowerConfig.Auth): packets dropped as not sealed
	// with it (forged, by the socket they came to: the heartbeat socket's
	// are heartbeats, the strobe socket's strobes) or as replayed (by
	// their type). Never applied, never counted elsewhere.
	StrobesForged      uint64 `json:"strobes_forged"`
	HeartbeatsForged   uint64 `json:"heartbeats_forged"`
	StrobesReplayed    uint64 `json:"strobes_replayed"`
	HeartbeatsReplayed uint64 `json:"heartbeats_replayed"`

	EpochApplied uint64 `json:"epoch_applied"` // Applied within the current epoch
	EpochLost    uint64 `json:"epoch_lost"`    // Lost within the current epoch

	Multicast     uint64 `json:"multicast"` // strobe datagrams received on the multicast socket (FollowerConfig.Multicast)
	Forwarded     uint64 `json:"forwarded"` // strobe datagrams sent on to children in the fan-out tree
	ForwardErrors uint64 `json:"forward_errors"`

	HeartbeatsSent      uint64 `json:"heartbeats_sent"` // datagrams
	HeartbeatSendErrors uint64 `json:"heartbeat_send_errors"`
	HeartbeatsDropped   uint64 `json:"heartbeats_dropped"`  // with a separate heartbeat socket: the sender fell 64 heartbeats behind, the oldest were dropped
	HeartbeatsReceived  uint64 `json:"heartbeats_received"` // datagrams (a split heartbeat counts each part)
	// HeartbeatPartsDropped counts parts of split heartbeats not
	// reassembled: stale, duplicate, inconsistent, or beyond the bound.
	HeartbeatPartsDropped uint64                   `json:"heartbeat_parts_dropped"`
	Peers                 map[string]PeerHeartbeat `json:"peers"`   // by sender name; at most 4096 names are tracked
	Targets               []string                 `json:"targets"` // where this slice's heartbeats go (besides the controller)

	Latency    Dist `json:"latency"`     // SwitchedMono − SentMono over the recorded slices (one host only: mono clocks differ across hosts)
	SwitchCost Dist `json:"switch_cost"` // the Switch callback's reported cost over the recorded slices
}

// PeerHeartbeat is what a Follower has heard from one peer.
type PeerHeartbeat struct {
	Epoch uint64 `json:"epoch"` // newest slice the peer has reported
	Seq   uint64 `json:"seq"`   // newest slice the peer has reported
	Addr  string `json:"addr"`  // the address that newest heartbeat came from
	Count uint64 `json:"count"` // heartbeats received from it
}

// Accounted reports whether every slice of the current epoch from
// FirstSeq to LastSeq was either applied or counted lost: the invariant
// of the sequence rules, whatever the network did.
func (s Stats) Accounted() bool {
	return s.LastSeq == 0 || s.EpochApplied+s.EpochLost == s.LastSeq-s.FirstSeq+1
}

// Stats returns the Follower's counters and distributions.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	st := Stats{
		Epoch: f.epoch, FirstSeq: f.first, LastSeq: f.last, Row: f.row, MemberEpoch: f.memberEpoch,
		Applied: f.c.applied, Lost: f.c.lost, Late: f.c.late, Stale: f.c.stale,
		Malformed: f.c.malformed, Unknown: f.c.unknown, Epochs: f.c.epochs,
		StrobesForged: f.c.strobesForged, HeartbeatsForged: f.c.hbForged,
		StrobesReplayed: f.c.strobesReplayed, HeartbeatsReplayed: f.c.hbReplayed,
		EpochApplied: f.c.epochApplied, EpochLost: f.c.epochLost,
		Multicast: f.c.multicast, Forwarded: f.c.forwarded, ForwardErrors: f.c.forwardErrors,
		HeartbeatsSent: f.c.hbSent, HeartbeatSendErrors: f.c.hbSendErrors, HeartbeatsDropped: f.c.hbDropped, HeartbeatsReceived: f.c.hbRecv,
		HeartbeatPartsDropped: f.c.hbPartsDropped,
		Peers:                 maps.Clone(f.seen), Targets: slices.Clone(f.peers),
	}
	recs := f.records.snapshot()
	f.mu.Unlock()
	lat := make([]int64, len(recs))
	cost := make([]int64, len(recs))
	for i, r := range recs {
		lat[i] = r.SwitchedMono - r.SentMono
		cost[i] = int64(r.SwitchCost)
	}
	st.Latency, st.SwitchCost = distOf(lat), distOf(cost)
	return st
}

// Records returns the last History slices applied, oldest first.
func (f *Follower) Records() []SliceRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records.snapshot()
}
