// Package telemetry holds what an agent measures and reports, as plain
// data: its slice clock's counters and distributions (the strobe
// follower, the controller's ticker, the cluster's switch skew) and its
// message relay's counters. The runtime fills them (strobe, comm/relay)
// and the API carries them (api) without either depending on the other.
package telemetry

import "time"

// Dist summarises a sample of durations.
type Dist struct {
	N    int           `json:"n"` // sample size
	Mean time.Duration `json:"mean"`
	P50  time.Duration `json:"p50"` // nearest-rank percentiles
	P99  time.Duration `json:"p99"`
	Max  time.Duration `json:"max"`
}

// FollowerStats is a snapshot of an agent's strobe follower (strobe.Follower).
type FollowerStats struct {
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
func (s FollowerStats) Accounted() bool {
	return s.LastSeq == 0 || s.EpochApplied+s.EpochLost == s.LastSeq-s.FirstSeq+1
}

// SkewStats summarises how far apart the agents switched.
type SkewStats struct {
	Slices  int  `json:"slices"`  // slices seen by at least two agents
	Skew    Dist `json:"skew"`    // per slice: latest − earliest SwitchedMono among the agents that applied it
	Latency Dist `json:"latency"` // SwitchedMono − SentMono over every record of those slices
	// Per slice whose strobe carried its boundary (DueMono), how long after
	// the boundary the new row started: Idle until the first agent
	// switched (no rank of the row ran before), Overhead until the last
	// did. A gang job whose ranks communicate progresses only once all of
	// them run, so Overhead is the slice's lost time for such a job, and
	// Idle the part that no job at all can use.
	Idle     Dist `json:"idle"`
	Overhead Dist `json:"overhead"`
}

// SliceRecord is what one agent saw of one slice.
type SliceRecord struct {
	Epoch        uint64        `json:"epoch"` // controller incarnation
	Seq          uint64        `json:"seq"`   // slice number
	Row          int           `json:"row"`
	MemberEpoch  uint64        `json:"member_epoch"`
	SentMono     int64         `json:"sent_mono"`     // from the strobe: when the controller sent it
	DueMono      int64         `json:"due_mono"`      // from the strobe: the slice boundary it starts (0: unknown)
	RecvMono     int64         `json:"recv_mono"`     // when this agent's transport received it
	SwitchedMono int64         `json:"switched_mono"` // when Switch returned
	SwitchCost   time.Duration `json:"switch_cost"`
}

// TickerStats summarises a Ticker.
type TickerStats struct {
	Ticks    uint64 `json:"ticks"`     // ticks delivered
	Skipped  uint64 `json:"skipped"`   // deadlines passed over because the loop overran a whole period
	Overruns uint64 `json:"overruns"`  // ticks whose strobe went out more than OverrunAfter late (see Sent)
	WakeLate Dist   `json:"wake_late"` // Woke − Deadline, over the last History ticks
	SendLate Dist   `json:"send_late"` // sentMono − Deadline, over the last History calls of Sent
	// RealtimeError says why Run's thread is not at real-time priority
	// ("" when it is, or none was asked for).
	RealtimeError string `json:"realtime_error"`
}

// RelayStats counts what an agent's message relay (comm/relay) has done.
type RelayStats struct {
	Mode  string `json:"mode"`
	Peers int    `json:"peers"` // other relays known by address (SetPeers)

	Sent      uint64 `json:"sent"`       // messages handed over by local ranks
	SentBytes uint64 `json:"sent_bytes"` // their payload bytes
	Delivered uint64 `json:"delivered"`  // messages delivered to local ranks
	Forwarded uint64 `json:"forwarded"`  // messages sent to other relays
	Received  uint64 `json:"received"`   // messages received from other relays
	Held      uint64 `json:"held"`       // messages held for a job not registered yet
	Dropped   uint64 `json:"dropped"`    // messages for ended jobs, unknown ranks, or beyond the hold limit
	// Duplicates counts numbered messages dropped because they had come
	// before: sent again after a relay restart (docs/runtime.md).
	Duplicates uint64 `json:"duplicates,omitempty"`

	// Buffered mode.
	Slices           uint64 `json:"slices"`             // strobes cut
	Transferred      uint64 `json:"transferred"`        // messages sent in slice transfers
	TransferredBytes uint64 `json:"transferred_bytes"`  // their bytes
	Deferred         uint64 `json:"deferred"`           // slice transfers that left messages for later (h_max)
	Announced        uint64 `json:"announced"`          // messages this relay's heartbeats announced (the plans)
	AnnouncedBytes   uint64 `json:"announced_bytes"`    // their bytes
	AnnouncedIn      uint64 `json:"announced_in"`       // messages other relays' heartbeats announced for this node
	AnnouncedInBytes uint64 `json:"announced_in_bytes"` //
	ReceivedIn       uint64 `json:"received_in"`        // messages received in slice transfers from other relays
	ReceivedInBytes  uint64 `json:"received_in_bytes"`  //
	MaxSliceBytes    uint64 `json:"max_slice_bytes"`    // largest transfer of one slice
	Outbox           int    `json:"outbox"`             // messages waiting for a slice now
	HeartbeatWaits   uint64 `json:"heartbeat_timeouts"` // transfers started without every peer's heartbeat

	// Refused counts relay links whose handshake failed: the peer did
	// not prove it holds the cluster key (Config.Key), or it went away
	// during the handshake.
	Refused uint64 `json:"refused"`
	// RanksRefused counts rank connections refused because the process
	// runs as another user than the job's ranks (SO_PEERCRED).
	RanksRefused uint64 `json:"ranks_refused"`

	Barriers uint64 `json:"barriers"` // barriers released here
	Blocked  int    `json:"blocked"`  // local ranks blocked now

	// Jobs is the traffic of each job with ranks here, running or ended
	// in the last minutes, by job number.
	Jobs []RelayJobStats `json:"jobs,omitempty"`
}

// RelayJobStats is one job's traffic at one relay: what its ranks on
// that node sent and received, and the collectives they announced (one
// per rank per collective: cosched's MPI library announces them).
type RelayJobStats struct {
	Job             int64  `json:"job"`
	Ended           bool   `json:"ended,omitempty"`
	Sent            uint64 `json:"sent"`             // messages handed over by the job's local ranks
	SentBytes       uint64 `json:"sent_bytes"`       // their payload bytes
	Delivered       uint64 `json:"delivered"`        // messages delivered to them
	DeliveredBytes  uint64 `json:"delivered_bytes"`  // their payload bytes
	Collectives     uint64 `json:"collectives"`      // collective entries they announced
	CollectiveBytes uint64 `json:"collective_bytes"` // the bytes they said they contribute
	// CollectiveSlices is, in buffered mode, the slices this relay cut
	// from the job's first collective announcement here to its latest:
	// over the collectives one rank made, minus one, it is the slices a
	// collective takes (the BCS measure: wall time would count load).
	CollectiveSlices uint64 `json:"collective_slices"`
	Probes           uint64 `json:"probes"` // probes they made
	// ChannelBytes is the part of SentBytes sent over same-node channels
	// (comm/relay/channels.go): counted by the ranks, not carried by the relay.
	ChannelBytes uint64 `json:"channel_bytes,omitempty"`
}
