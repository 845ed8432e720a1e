// Package ctl is the controller's state machine: the job table, the map
// from matrix columns to agents' processors, and the gang scheduler core,
// with no clock, goroutine, lock or I/O. It is built like etcd's raft
// RawNode: the caller delivers inputs, then collects one batch of effects
// (Ready), carries them out in the documented order, and acknowledges them
// (Advance).
//
// # Inputs
//
//   - Tick(now): the clock. Every other input happens at the time of the
//     last Tick; Tick also runs a scheduling pass. The caller ticks before
//     an input (to stamp it) and after it (to schedule).
//   - Submit(spec), Cancel(id): the API's writes. Submit assigns the job id
//     (the counter is state, persisted).
//   - AgentUp(report): an agent's control connection is (re)established. The
//     report carries its processors, the ranks it runs (job, rank, pid,
//     stopped) and the exits it recorded while it had no controller. The
//     machine reconciles: it adopts ranks of jobs it runs, records exits,
//     tells the agent to kill ranks of jobs it does not know or that ended,
//     and counts ranks it placed there but the agent does not have as lost.
//   - AgentDown(name): the connection is gone but the agent may come back
//     (its ranks keep running): its processors leave service, jobs keep
//     their ranks there, messages to it are dropped (reconciled at AgentUp).
//     An agent not back within Config.ReconnectGrace is gone.
//   - AgentGone(name): the agent left the cluster or died: its ranks are
//     dead, their jobs fail.
//   - RankExit(x): an agent reports how a rank ended. Duplicates and
//     reports for unknown or finished jobs are ignored.
//
// # Effects and their order
//
// Ready returns, and the caller must carry out in this order:
//
//  1. Records: append them to the journal and wait until they are durable.
//     Nothing else may happen before: an API answer (201 for a submission)
//     or a message to an agent must never reveal state the journal could
//     lose.
//  2. Messages: per-agent launch, kill and alternate orders, in the order
//     given (a job's launch precedes its alternates).
//  3. Targets: when set (MembersChanged), the agents the next strobe goes
//     to changed; the next strobe carries the new member epoch.
//  4. Changes: job state changes, for logs and metrics.
//
// Then Advance. The row of each strobe is not in Ready: the slice clock
// asks for it with Slice, at the slice boundary, on its own thread, under
// the caller's lock (it must not wait for a batch to be persisted).
//
// # Persistence
//
// Records are deltas (a job submitted, started, its rows, a rank's exit or
// pid, its end; an agent's block of columns; the clock's origin). Restore
// rebuilds the whole machine from them — queued jobs, running jobs at
// their placement (the core's matrix too, via gang.Scheduler.Resume), and
// finished jobs up to Config.History — so that replaying every record a
// machine emitted yields the same job table. Snapshot returns the fewest
// records that rebuild the current state, for compacting a journal.
package ctl
