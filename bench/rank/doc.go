// Package rank is the benchmark rank program: one process of a synthetic
// benchmark job with a ⟨g, v, comm, sync⟩ template (package bench), doing
// the same work as the process the simulator models (docs/MODELS.md, "A
// job's work: its dedicated run" and "BCS"). `cosched bench-rank` runs it
// over a *comm.Comm; Run takes the small Comm interface instead, so the
// logic does not depend on how the ranks talk and is tested with an
// in-memory fake.
//
// # Iterations
//
// Rank q runs Config.Iterations iterations. Iteration i computes for
// Template.Compute(Seed, q, i) — the very draw the simulator's jss.Program
// uses, so a measured run and a simulated run with the same seed do the
// same work — and then communicates. The tag of every message of
// iteration i is i, so iterations never mix:
//
//	barrier       Barrier.
//	B (news,      step by step in bench.Steps order (which cannot
//	  transpose)  deadlock): Send to the step's To, then Recv from its From.
//	NB (news,     Irecv from every step's From, Isend to every step's To,
//	  transpose)  Barrier, then Waitall: hand every message to the node,
//	              arrive at the barrier, and block until the barrier has
//	              completed and every incoming message has been delivered.
//
// Under B and NB alike a rank sends and receives
// bench.MessagesPerIteration messages per iteration.
//
// # Messages
//
// Every message has Config.MessageSize bytes (bench.DefaultMessageSize by
// default). Its first HeaderSize bytes say who sent it and when: the
// iteration (8 bytes), the sender's rank (4 bytes) and the step (4 bytes),
// little-endian; the rest is zero. Each received message is checked: its
// source, tag, size and header must be exactly those of the message the
// pattern says arrives there. Because comm delivers the messages of one
// (source, tag) in the order they were sent, the step matches too, even
// when a neighbour appears twice in a rank's steps (news on two rows or two
// columns). A mismatch ends Run with an error naming the iteration and
// what differed: a cheap end-to-end check of the message library.
//
// # Compute work
//
// Config.Work says what "compute for d" means:
//
//   - CPU burns d of the calling thread's CPU time: the goroutine is locked
//     to its OS thread while it spins, and the thread's CPU clock
//     (CLOCK_THREAD_CPUTIME_ID) is read between short bursts of arithmetic.
//     A thread stopped by the scheduler (SIGSTOP) or waiting for a core
//     accrues no CPU time, so neither counts, by construction. A phase
//     overshoots d by at most one burst (a few µs) plus one clock read.
//   - Wall waits d of wall-clock time during which the rank is not
//     stopped, without using a core: for clusters of more agents than
//     cores, where CPU-bound ranks of different agents would compete. The
//     rank sleeps in steps of at most 1 ms, each timed from the end of the
//     previous one, and credits each step with the wall time it took, but
//     never more than the step plus a tolerance of 200 µs (a generous
//     wake-up latency). A stopped rank reads no clock, so a SIGSTOP falls
//     inside one step, which it makes look longer; the cap credits that
//     step with at most 1.2 ms however long the stop lasted. Error bound:
//     a phase's wall time minus the time the rank was stopped is at least
//     d − k × 1.2 ms, where k is the number of stops during the phase, and
//     at least d without stops. A wake-up later than 200 µs after a step
//     is not credited beyond the cap, so on a host that wakes sleepers late
//     a phase lasts longer than d, never shorter.
//
// Both check ctx between bursts or steps, so a cancelled context ends a
// phase within about a millisecond.
//
// # Statistics
//
// Run returns comm.Stats: Iterations completed; Compute, the sum of the
// completed compute phases' drawn times in ns — the work the simulator
// counts as the job's useful computation, so measured and simulated
// processor utilisation share their numerator; CommWait, the wall time
// spent in communication calls; and Wall, from the start of the first
// iteration to the end of the last (to the failure, on an error).
package rank
