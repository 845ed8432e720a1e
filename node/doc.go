// Package node is cosched's runtime: the per-node agent, the controller
// one agent runs, and the job API every agent serves.
//
// # Agent
//
// Start(cfg) runs one agent: memberlist gossip (member.Membership) for
// discovery and liveness, a strobe socket whose receive thread switches
// rows (strobe.Follower calling the switcher, which stops and continues
// the ranks of node/rank), a heartbeat socket, a control listener, and the
// HTTP API. Its node metadata carries the strobe, heartbeat, control and
// API addresses and its processor count. Shutdown (and SIGINT/SIGTERM in
// the CLI) leaves the cluster and kills every rank; a killed agent's
// ranks die by their parent-death signal. With Config.KeepRanks each rank
// runs under a keeper that outlives the agent (keep.go, node/rank): a
// signal detaches the agent instead (Detach), a killed agent's ranks live
// on, and the agent started again with the same name and state directory
// adopts them and reports them live in its welcome.
//
// # Controller
//
// The agent started with Config.Controller also runs a Controller: an I/O
// shell around node/ctl's state machine, which holds the job table, the
// map from matrix columns to agents' processors (one per processor, in
// join order; a departed agent's columns go offline and come back when it
// returns) and one gang.Scheduler driven with wall-clock offsets. The
// shell's loop feeds the machine (API calls, membership, control
// connections, timers) and carries out its effects in order: records to
// the Journal, then control messages (a Start launches the ranks on each
// column's agent, a Kill or a cancel kills them everywhere, an Alternate
// adds a row a job may also run in), then the API's answer. In gang mode
// the slice clock (strobe.Ticker, SCHED_FIFO when allowed) asks the
// machine for the row under the shell's mutex, which the loop never holds
// during I/O, and sends the strobe.
//
// # Control protocol
//
// One TCP connection per agent, opened by the controller, carrying
// internal/frame frames (control.go): hello/welcome, launch, kill,
// alternate one way, rankExit (exit status, CPU time, max RSS) the other.
// The welcome reports the agent's live ranks and the exits no controller
// has heard of; the controller adopts, records or kills them. An agent
// that accepts a newer controller connection closes the old one; an agent
// without a controller keeps its ranks for Config.ControllerGrace, then
// kills them. A broken connection is dialed again; the agent's jobs keep
// running meanwhile. A malformed frame is logged and closes that
// connection; the daemon carries on.
//
// # Job states
//
// PENDING → RUNNING → COMPLETED | FAILED | CANCELLED | TIMEOUT. A job that
// fails on one rank, loses an agent, is cancelled or reaches its limit is
// ended on every node; it is reported ended once every rank's exit has
// been heard (or its agent is gone).
//
// # Priorities
//
// Switching must preempt busy ranks. With Config.Priority > 0 the agent
// runs at SCHED_RR Priority/5 (round-robin, so that a Go runtime thread
// spinning for another cannot starve it), its strobe receive-and-switch
// thread and the controller's slice clock at SCHED_FIFO Priority; nothing
// the agent forks inherits real-time priority; heartbeats, the API and
// everything else stay off the strobe path. Ranks are always started at
// SCHED_NORMAL with Config.RankNice. Without the privilege the agent logs a
// warning and runs at normal priority (Config.Nice still applies if it can).
package node
