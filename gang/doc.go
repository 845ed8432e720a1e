// Package gang is cosched's scheduler core: a pure, deterministic state
// machine that decides which job runs where and when, shared by the
// simulator (package jss, virtual time) and the runtime controller (package
// node, wall-clock time).
//
// # Purity
//
// The core never reads a clock, performs I/O, starts a goroutine or draws a
// random number. Every input carries an explicit now, and every output is a
// returned value:
//
//	s, err := gang.New(cfg)
//	err = s.Submit(job, now)    // a job arrives
//	err = s.Finished(id, now)   // a job ended, failed or was cancelled
//	ds, err := s.Schedule(now)  // decisions: Start{job, row, columns}, Kill, …
//	row := s.Slice(now)         // matrix row that runs in the slice starting now
//	t, ok := s.NextWakeup()     // when the core next wants Schedule called
//
// The same sequence of calls always yields the same decisions, so a recorded
// event log replayed into a fresh Scheduler reproduces a run exactly (see
// package gangtest).
//
// # Calling order
//
// Times are time.Duration offsets from an origin the caller chooses (the
// simulator uses the trace's time zero, the runtime its start). They must not
// go backwards across calls. At one instant a caller reports every job that
// ended, then every job that arrived, then calls Schedule once; the decisions
// it returns must be carried out (a Start means the job now holds those
// columns) before the next call. Calling Schedule again at the same instant
// is allowed and returns nothing new unless the state changed.
//
// # The matrix and policies
//
// The machine is an Ousterhout matrix of MPL rows by Processors columns. A
// job occupies one row and Processors columns (any columns: free variable
// partitioning). Space sharing is the MPL = 1 case. The queue policies are:
//
//   - fcfs: strict arrival order; the first queued job that does not fit
//     blocks every job behind it.
//   - easy: aggressive (EASY) backfilling. The first queued job gets a
//     reservation at the shadow time, the earliest time enough processors are
//     free according to running jobs' estimates; a later job may start now if
//     it fits and either ends (by its estimate) by the shadow time or uses
//     only the processors that will still be spare at the shadow time.
//   - easy-sjbf: easy, considering backfill candidates shortest estimate
//     first instead of in arrival order.
//   - conservative: every queued job holds a reservation, placed in arrival
//     order at the earliest time it fits in the availability profile; a job
//     starts when its reservation is reached, so backfilling delays no
//     queued job. When a job ends before its estimate, or a queued job is
//     removed, reservations are compressed at once: each queued job, in
//     arrival order, is moved to the earliest time it now fits (never later
//     than before).
//   - fcfs-bf, sjf-bf, priority-bf, lxfw-bf: priority backfill (the NCSA
//     Origin 2000 study). At every pass the queue is ordered by a priority
//     (Weights: wait hours, expansion factor, processors, memory share;
//     sjf-bf: shortest estimate first); the first N jobs in that order that
//     cannot start hold reservations (Config.Backfill: N, dynamic or fixed)
//     and a job starts now only if it delays none of them. fcfs-bf with one
//     dynamic reservation is easy; with exact estimates and every job
//     reserved it is conservative.
//
// Estimates drive every reservation. The core assumes a job ends by its
// estimate; with Config.EnforceLimits it asks for the job to be killed when
// the estimate is reached (a Kill decision), which is how the runtime
// implements time limits.
//
// # Explanations
//
// Every Decision carries an Explanation of the rule that produced it, and
// Explain tells why a queued job has not started (no room, behind the
// queue head, would delay a reservation, reserved for a later time).
package gang
