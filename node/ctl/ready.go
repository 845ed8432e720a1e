package ctl

import (
	"github.com/cosched/cosched/api"
	"time"
)

// Ready is one batch of effects, to carry out in the order of its fields
// (see the package comment), then acknowledge with Advance.
type Ready struct {
	// Records must be durable before anything else happens.
	Records []Record
	// Messages go to agents, in order.
	Messages []Message
	// MembersChanged reports that Targets changed: the agents strobes go to.
	MembersChanged bool
	Targets        []string
	// Changes are the jobs' state changes.
	Changes []Change
}

// Empty reports whether the batch holds nothing to do.
func (r *Ready) Empty() bool {
	return len(r.Records) == 0 && len(r.Messages) == 0 && !r.MembersChanged && len(r.Changes) == 0
}

// Message is an order for one agent: exactly one of Launch, Kill and
// Alternate is set.
type Message struct {
	To        string
	Launch    *Launch
	Kill      *Kill
	Alternate *Alternate
}

// Launch starts a job's ranks on one agent.
type Launch struct {
	Job   int64
	Size  int          // ranks in the job
	Row   int          // the job's own row
	Rows  []int        // every row it runs in: its own and alternates
	Ranks []LaunchRank // the ranks on this agent
	Nodes []string     // the node of every rank of the job (for the relays)
}

// LaunchRank is one rank to start, on the agent's local processor Slot.
type LaunchRank struct {
	Rank int
	Slot int
}

// Kill ends a job's ranks on one agent.
type Kill struct {
	Job    int64
	Reason string
}

// Alternate adds (On) or removes a row a job runs in.
type Alternate struct {
	Job int64
	Row int
	On  bool
}

// Change is a job's new state, and why.
type Change struct {
	Job    int64
	State  api.State
	Reason string
}

// Strobe is what the next slice's strobe carries.
type Strobe struct {
	Seq   uint64
	Row   int
	Epoch uint64 // the member epoch: it changes with the targets
}

// AgentReport is what an agent tells a controller when its control
// connection opens.
type AgentReport struct {
	Name   string
	CPUs   int
	Memory int64      // bytes it offers jobs; 0: not advertised (no admission by memory)
	Ranks  []LiveRank // the ranks it runs
	Exits  []RankExit // exits it recorded while it had no controller
	// Incarnation identifies the agent process's life (random at its
	// start; 0: an agent that does not say). Launched are the jobs that
	// life received a launch for, newest last, all of those above
	// LaunchedFloor (it forgot older ones): with them a controller tells
	// a launch that never arrived (sent again) from ranks that died.
	Incarnation   uint64
	Launched      []int64
	LaunchedFloor int64
	// KeepsRanks: its ranks outlive it (Config.KeepRanks), so when it
	// leaves the cluster it may come back with them (AgentLeft).
	KeepsRanks bool
}

// LiveRank is a rank an agent runs.
type LiveRank struct {
	Job     int64
	Rank    int
	PID     int
	Stopped bool
}

// RankExit is how a rank ended, as its agent reports it.
type RankExit struct {
	Job     int64
	Rank    int
	Node    string
	PID     int
	Code    int
	Signal  string
	CPUTime time.Duration
	MaxRSS  int64
	Err     string // it could not be started
	// Failure is why the agent counts a rank that exited 0 as failed.
	Failure string
	// Reason, when set, is the job's failure reason as a whole (a rank
	// of the job called MPI_Abort): the job fails with it, whichever
	// rank's exit comes first.
	Reason string
	Stats  *api.BenchStats
	Usage  *api.NodeUsage // the job's accounting on the node, with its last rank there
}

func (x *RankExit) failed() bool {
	return x.Code != 0 || x.Signal != "" || x.Err != "" || x.Failure != ""
}

func (x *RankExit) text() string {
	switch {
	case x.Err != "":
		return "could not start: " + x.Err
	case x.Failure != "":
		return x.Failure
	case x.Signal != "":
		return "was " + x.Signal
	}
	return "exited with status " + itoa(x.Code)
}
