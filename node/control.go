package node

import (
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// The control protocol between the controller and the agents: one TCP
// connection per agent, opened by the controller, carrying frames
// (internal/frame) whose msgpack bodies are the types below. Type numbers
// are part of the wire format: append only.
const (
	msgHello     frame.Type = 1 // controller → agent: hello
	msgLaunch    frame.Type = 2 // controller → agent: launch
	msgKill      frame.Type = 3 // controller → agent: kill
	msgAlternate frame.Type = 4 // controller → agent: alternate
	msgRankExit  frame.Type = 5 // agent → controller: rankExit
	msgWelcome   frame.Type = 6 // agent → controller: welcome (answer to hello)
	// PMI barriers (pmi.go): agent → controller when its ranks are in,
	// controller → agents when every agent is.
	msgPMIBarrier    frame.Type = 7
	msgPMIBarrierOut frame.Type = 8
)

// maxControlFrame bounds a control frame: a launch carries argv and env.
const maxControlFrame = 1 << 20

// hello opens a control connection.
type hello struct {
	Controller string  `msgpack:"controller"`
	Epoch      uint64  `msgpack:"epoch"`
	Mode       string  `msgpack:"mode"`
	Slice      int64   `msgpack:"slice_ns"`  // the slice δ (time-shared modes)
	Bandwidth  float64 `msgpack:"bandwidth"` // bytes/s per node: BCS's h_max = bandwidth × δ; 0 = unlimited
	MPL        int     `msgpack:"mpl"`       // rows of the matrix
	// Grace is how long the controller waits for an agent whose
	// connection broke before its ranks count as lost (its
	// ReconnectGrace): what an agent's guard keeps its ranks for when
	// the agent dies (controllerGraceFile). 0 from a controller before it.
	Grace int64 `msgpack:"grace_ns,omitempty"`
}

// welcome answers hello with what the agent runs, so that a controller
// (restarted, or reached again after the connection broke) can adopt the
// ranks of its jobs, count the exits it missed, and kill the ranks of jobs
// it does not know. Ranks and Exits were added in protocol revision 2; an
// agent before it sends Jobs only.
type welcome struct {
	Node  string     `msgpack:"node"`
	Jobs  []int64    `msgpack:"jobs"`
	Ranks []liveRank `msgpack:"ranks,omitempty"`
	// Exits are the latest exits the agent delivered to a controller
	// (repeated: that controller may have died before journaling them;
	// repeats are ignored) and the ranks that ended while it had none
	// (at most maxWelcomeExits in all; the rest follow as rank exits).
	Exits []rankExit `msgpack:"exits,omitempty"`
	// Incarnation is the agent process's life (random at its start);
	// Launched the jobs this life got a launch for (newest last), complete
	// above LaunchedFloor. A controller that journaled a job's start but
	// died before its launch went out is followed by one that sends it
	// again (ctl.AgentReport).
	Incarnation   uint64  `msgpack:"inc,omitempty"`
	Launched      []int64 `msgpack:"launched,omitempty"`
	LaunchedFloor int64   `msgpack:"launched_floor,omitempty"`
	// Keeps: the agent's ranks outlive it (--keep-ranks); appended.
	Keeps bool `msgpack:"keeps,omitempty"`
}

// liveRank is a rank an agent runs.
type liveRank struct {
	Job     int64 `msgpack:"job"`
	Rank    int   `msgpack:"rank"`
	PID     int   `msgpack:"pid"`
	Stopped bool  `msgpack:"stopped"` // SIGSTOPped: not in the current row
}

// launch starts a job's ranks that live on one agent.
type launch struct {
	Job   int64        `msgpack:"job"`
	Size  int          `msgpack:"size"`
	Argv  []string     `msgpack:"argv"`
	Env   []string     `msgpack:"env"`
	Row   int          `msgpack:"row"`
	Rows  []int        `msgpack:"rows"` // every row it runs in: its own and alternates
	Ranks []launchRank `msgpack:"ranks"`
	Nodes []string     `msgpack:"nodes"` // the node of every rank of the job (for the relays)
	// Bench, when set, replaces Argv: the agent runs its own cosched's
	// bench-rank (agents may not share a path) and hands it the job in
	// bench.EnvJob.
	Bench *bench.Job `msgpack:"bench_job,omitempty"`
	// Owner is who the ranks run as, Dir where (empty: the owner's home);
	// both appended in this version, absent from older controllers.
	Owner *api.Owner `msgpack:"owner,omitempty"`
	Dir   string     `msgpack:"dir,omitempty"`
	// MPI is the process-management interface the ranks get ("" or
	// none: none; pmi1: PMI-1 over PMI_FD).
	MPI string `msgpack:"mpi,omitempty"`
	// MemoryPerRank is the job's memory per process (bytes, 0 = no
	// limit): the agent limits the job's cgroup to it times its ranks.
	MemoryPerRank int64 `msgpack:"memory_per_rank,omitempty"`
}

type launchRank struct {
	Rank int `msgpack:"rank"`
	Slot int `msgpack:"slot"` // the agent's local processor index
}

// kill ends a job's ranks on an agent.
type kill struct {
	Job    int64  `msgpack:"job"`
	Reason string `msgpack:"reason"`
}

// alternate adds or removes a row a job runs in (alternative scheduling).
type alternate struct {
	Job int64 `msgpack:"job"`
	Row int   `msgpack:"row"`
	On  bool  `msgpack:"on"`
}

// rankExit reports how a rank ended.
type rankExit struct {
	Job     int64  `msgpack:"job"`
	Rank    int    `msgpack:"rank"`
	Node    string `msgpack:"node"`
	PID     int    `msgpack:"pid"`
	Code    int    `msgpack:"code"`
	Signal  string `msgpack:"signal"`
	CPUTime int64  `msgpack:"cpu_ns"`
	MaxRSS  int64  `msgpack:"max_rss"`
	Err     string `msgpack:"err"` // it could not be started
	// Failure is why the agent counts a rank that exited 0 as failed.
	Failure string `msgpack:"failure,omitempty"`
	// Reason, when set, is the job's failure reason as a whole, which
	// the agent knows better than this rank's exit: a rank of the job
	// called MPI_Abort (the reason names that rank, whichever rank's
	// exit reaches the controller first).
	Reason string `msgpack:"reason,omitempty"`
	// Stats is a benchmark rank's report (comm.Stats), if it sent one.
	Stats *comm.Stats `msgpack:"stats,omitempty"`
	// Usage is the job's accounting on this node from its cgroup,
	// carried by the last of its ranks here to exit.
	Usage *nodeUsage `msgpack:"usage,omitempty"`
}

// nodeUsage is one job's accounting on one node.
type nodeUsage struct {
	CPUTime     int64  `msgpack:"cpu_ns"`
	PeakMemory  int64  `msgpack:"peak_memory"`
	MemoryLimit int64  `msgpack:"memory_limit"`
	Processes   int    `msgpack:"processes"`
	OOMKills    uint64 `msgpack:"oom_kills"`
}
