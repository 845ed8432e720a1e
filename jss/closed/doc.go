// Package closed simulates gang scheduling in a closed queueing network, the
// model of Karatza's studies of gang scheduling in distributed systems.
//
// # The model
//
// P processors, each with its own queue, and one I/O unit (a single FCFS
// server, exponential service of mean k). N jobs circulate for ever:
// processors → I/O → processors. Each time a job returns from I/O it draws a
// size uniform in 1..P and sends one task to each of the size processors
// with the fewest tasks (queued plus in service); ties go, by default, to
// processors in a random order (TiesRandom), or to the lowest index
// (TiesLowest). All tasks of a job start together and run for the same
// service time, drawn once per job (Service: Erlang-2, exponential or a
// two-stage branching Erlang of coefficient of variation C > 1, all of mean
// m). A job's processors are released together at its end.
//
// # Policies
//
// A scheduling pass (Policy.Start) decides which waiting jobs start; it is
// a pure function of the processors' state and the waiting jobs, so tests
// can drive it with hand-built queues:
//
//	fcfs   a job starts only if each of its tasks is first in its
//	       processor's queue (queues in order of arrival at the processors)
//	       and each of those processors is idle
//	afcfs  jobs are examined in order of arrival; any job whose processors
//	       are all idle starts, even behind a blocked earlier job
//	ljfs   as afcfs, but queues (and the examination) are ordered by job
//	       size, largest first, then by arrival
//
// # Time and determinism
//
// Run is a discrete-event simulation: no clock, no goroutine, no global
// randomness. Random quantities come from a math/rand/v2 PCG seeded with
// Config.Seed, or from Config.Draws (tests inject fixed service times). The
// events of one instant are all handled (processor completions before I/O
// completions, each kind in the order it was scheduled) before one
// scheduling pass runs, so equal times give the same schedule on every run.
//
// # Measurements
//
// A replication discards a warm-up: its measurement window (T0, T1] starts
// at the Warmup-th processor completion (0 with no warm-up) and ends at the
// (Warmup+Completions)-th. Within the window:
//
//	response time   completion − arrival at the processor queues (queueing
//	                plus service), per job completing in the window
//	cycle time      time between two successive arrivals of a job at the
//	                processor queues (response + I/O queueing + I/O
//	                service), per cycle ending in the window
//	throughput      processor completions in the window / (T1 − T0)
//	cpu_util        busy processor-time / (P · (T1 − T0))
//	io_util         I/O busy time / (T1 − T0)
//
// Little's law holds within the window up to the cycles that straddle its
// ends: N ≈ throughput · mean cycle time.
//
// Experiment.Run runs independent replications of each (policy, N) point
// (replication r's seed derived from the base seed by ReplicationSeed, the
// same for every point) and reports each metric's mean over replications
// with the half-width of its 95 % Student-t confidence interval. Gains
// relative to FCFS at the same N compare those means:
//
//	D_RT = (RT_fcfs − RT_p) / RT_fcfs   relative decrease in response time
//	D_K  = (K_fcfs − K_p) / K_fcfs      relative decrease in cycle time
//	D_R  = (R_p − R_fcfs) / R_fcfs      relative increase in throughput
package closed
