package api

import (
	"fmt"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/strobe"
)

// NodesReport is GET /v1/nodes: every agent, and with ?stats=1 each
// agent's strobe statistics and the cluster's.
type NodesReport struct {
	Nodes   []NodeInfo        `json:"nodes"`
	Cluster *ClusterStats     `json:"cluster,omitempty"`
	Skew    *strobe.SkewStats `json:"skew,omitempty"`
}

// NodeStats is one agent's view of the strobes.
type NodeStats struct {
	Strobe strobe.Stats `json:"strobe"`
	// Realtime is the strobe thread's scheduling: "SCHED_FIFO <prio>",
	// or "normal" with the reason real-time priority is not in effect.
	Realtime string     `json:"realtime"`
	Relay    RelayStats `json:"relay"`
	// SlotReuses counts the ranks this agent continued in another row's
	// slice because that slice's rank was blocked (BCS).
	SlotReuses uint64 `json:"slot_reuses"`
	// Cgroups is how jobs are contained: "v1", "v2" or "none (why)".
	Cgroups string `json:"cgroups"`
	// Suspend is how ranks are suspended: "signal" or "freezer".
	Suspend string               `json:"suspend"`
	Records []strobe.SliceRecord `json:"records,omitempty"`
}

// ClusterStats is what only the controller knows: its slice clock.
type ClusterStats struct {
	Mode   sharing.Mode `json:"mode"`
	Slice  Duration     `json:"slice"`
	MPL    int          `json:"mpl"`
	Policy gang.Policy  `json:"policy"`
	// The options of a priority-backfill policy (empty with any other):
	// how many queued jobs hold a reservation ("inf": every one), whether
	// reservations are dynamic or fixed, and the priority weights in use
	// (the policy's preset unless replaced; none with sjf-bf).
	Reservations    string               `json:"reservations,omitempty"`
	ReservationMode gang.ReservationMode `json:"reservations_mode,omitempty"`
	Weights         *gang.Weights        `json:"weights,omitempty"`
	Online          int                  `json:"processors_online"`
	// Ticks is the slice clock: strobes sent, deadlines skipped because the
	// controller overran a whole slice, strobes sent late (overruns), and
	// how late strobes went out after their deadline.
	Ticks strobe.TickerStats `json:"ticks"`
}

// JobUsage is a job's accounting from its cgroups, summed over its nodes
// (peak memory and limit: the largest node's).
type JobUsage struct {
	CPUTime     Duration `json:"cpu_time"`
	PeakMemory  int64    `json:"peak_memory"`            // bytes, the largest node's
	MemoryLimit int64    `json:"memory_limit,omitempty"` // bytes per node, the largest; 0 = none
	Processes   int      `json:"processes"`              // the most seen at once, summed over nodes
	OOMKills    uint64   `json:"oom_kills,omitempty"`
	Nodes       int      `json:"nodes"` // nodes that reported
}

// Add folds one node's report in.
func (u *JobUsage) Add(n NodeUsage) {
	u.CPUTime.D += n.CPUTime.D
	u.PeakMemory = max(u.PeakMemory, n.PeakMemory)
	u.MemoryLimit = max(u.MemoryLimit, n.MemoryLimit)
	u.Processes += n.Processes
	u.OOMKills += n.OOMKills
	u.Nodes++
}

// Suspension methods (node.Config.Suspend, NodeStats.Suspend).
const (
	SuspendSignal  = "signal"
	SuspendFreezer = "freezer"
)

// AuthScheme is the Authorization scheme of API tokens:
// "Authorization: Cosched <token>".
const AuthScheme = "Cosched"

// ParseMPI checks an --mpi value ("" means the cluster's default).
func ParseMPI(s string) (string, error) {
	switch s {
	case "", MPINone, MPIPMI1:
		return s, nil
	}
	return "", fmt.Errorf("mpi %q: want none or pmi1", s)
}

// RelayStats is an agent's message relay's counters (comm/relay's Stats,
// which converts to it: the two keep the same fields).
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

	Barriers uint64 `json:"barriers"` // barriers released here
	Blocked  int    `json:"blocked"`  // local ranks blocked now
}
