package api

import (
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/telemetry"
)

// NodesReport is GET /v1/nodes: every agent, and with ?stats=1 each
// agent's strobe statistics and the cluster's.
type NodesReport struct {
	Nodes   []NodeInfo           `json:"nodes"`
	Cluster *ClusterStats        `json:"cluster,omitempty"`
	Skew    *telemetry.SkewStats `json:"skew,omitempty"`
	// Cursor is, with ?since=, what the reader now has: pass it back as
	// the next since= for the records added after these (Cursor's
	// String).
	Cursor string `json:"cursor,omitempty"`
}

// NodeStats is one agent's view of the strobes.
type NodeStats struct {
	Strobe telemetry.FollowerStats `json:"strobe"`
	// Realtime is the strobe thread's scheduling: "SCHED_FIFO <prio>",
	// or "normal" with the reason real-time priority is not in effect.
	Realtime string     `json:"realtime"`
	Relay    RelayStats `json:"relay"`
	// SlotReuses counts the ranks this agent continued in another row's
	// slice because that slice's rank was blocked (BCS).
	SlotReuses uint64 `json:"slot_reuses"`
	// Lends breaks SlotReuses down by the matrix cell that lent its
	// processor: the local slot (the node's Slot-th column) and the row
	// whose slice it was.
	Lends []SlotLends `json:"lends,omitempty"`
	// Cgroups is how jobs are contained: "v1", "v2" or "none (why)".
	Cgroups string `json:"cgroups"`
	// Suspend is how ranks are suspended: "signal" or "freezer".
	Suspend string                  `json:"suspend"`
	Records []telemetry.SliceRecord `json:"records,omitempty"`
}

// MaxRecords bounds GET /v1/nodes?records=N: the slice records an agent
// keeps (strobe.FollowerConfig.History's default).
const MaxRecords = 4096

// SlotLends counts the slices of row Row in which local slot Slot lent its
// processor to another row's rank (BCS slot reuse).
type SlotLends struct {
	Slot  int    `json:"slot"`
	Row   int    `json:"row"`
	Count uint64 `json:"count"`
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
	Ticks telemetry.TickerStats `json:"ticks"`
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
	case "", MPINone, MPIPMI1, MPICosched, MPIPMIx:
		return s, nil
	}
	return "", fmt.Errorf("mpi %q: %s", s, mpiWant)
}

// RelayStats is an agent's message relay's counters.
type RelayStats = telemetry.RelayStats

// JobLive is GET /v1/jobs/ID/live: what a job's ranks do now, node by
// node, as its owner and operators may see it.
type JobLive struct {
	ID    int64      `json:"id"`
	State State      `json:"state"`
	Nodes []NodeLive `json:"nodes"`
}

// NodeLive is one node's part of a job now (GET /v1/local/jobs/ID/live):
// the state of its ranks in the slice this node is in, and the job's
// cgroup figures here.
type NodeLive struct {
	Node  string     `json:"node"`
	At    time.Time  `json:"at"`  // when it was read (rates: the difference of two readings)
	Seq   uint64     `json:"seq"` // the slice this node last applied
	Row   int        `json:"row"` // and its row
	Ranks []RankLive `json:"ranks"`
	// Cgroup is false where the agent runs without cgroups: no figures.
	Cgroup     bool     `json:"cgroup"`
	CPUTime    Duration `json:"cpu_time"`    // used so far by the job's processes here
	Memory     int64    `json:"memory"`      // bytes in use now
	PeakMemory int64    `json:"peak_memory"` // bytes, the most so far
	Processes  int      `json:"processes"`
	// Error says why this node did not answer (the others' parts stand).
	Error string `json:"error,omitempty"`
}

// RankLive is a rank's state in the current slice: running, stopped,
// blocked (in communication, asleep in the relay: under BCS its
// processor goes to another row's rank) or exited; Reusing, that it runs
// in another row's slice on a processor lent to it (BCS slot reuse).
type RankLive struct {
	Rank    int    `json:"rank"`
	State   string `json:"state"`
	Reusing bool   `json:"reusing,omitempty"`
}

// Rank states of RankLive.
const (
	RankRunning = "running"
	RankStopped = "stopped"
	RankBlocked = "blocked"
	RankExited  = "exited"
)
