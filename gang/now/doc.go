// Package now is the scheduler core for a network of workstations (NOW)
// with nodes of different speeds, after Arndt, Freisleben, Kielmann and
// Thilo, "A comparative study of online scheduling algorithms for networks
// of workstations" (Cluster Computing, 2000). Like package gang it is pure:
// no clock, no I/O, no goroutines, and randomness only from a *rand.Rand its
// caller supplies.
//
// # Model
//
// A machine is a list of nodes, node i with relative speed s_i > 0. A job
// has k tasks (k = 1 is a sequential job) and needs k distinct nodes for its
// whole run; scheduling is non-preemptive. A job's processing time t is the
// time one of its tasks takes on a node of speed 1. On nodes with speeds
// s_1 … s_k the job progresses at its effective speed
//
//	v = min(s_i)        a rigid job: it runs at the speed of its slowest node
//	v = Σ s_i / k       a load-balanced job: its total work k·t is spread
//	                    over the nodes in proportion to their speeds
//
// and runs t / v (so a balanced job takes k·t / Σ s_i). Whether a job is
// load-balanced is an attribute of the job (Job.Balanced).
//
// A started job always gets the k fastest idle nodes (equal speeds: lower
// node index first).
//
// # Policies
//
// The queue is kept in arrival order (Submit order). At every Schedule call
// the policy starts jobs until it stops:
//
//   - fifo: start the queue head while it fits; the first job that does not
//     fit blocks the queue.
//   - firstfit: start, in arrival order, every queued job that fits.
//   - random: among the queued jobs that fit, start one chosen uniformly at
//     random (Config.Rand), and repeat until none fits. It never blocks.
//   - lpt / spt: the job with the longest / shortest estimated processing
//     time (ties: earlier arrival) is chosen; if it does not fit the queue
//     blocks until it does.
//   - fifo-bf: fifo with EASY backfilling. When the head does not fit it
//     gets a reservation: the shadow time is the earliest time at which k
//     nodes are idle, assuming each running job ends at its estimated end
//     (start + estimate / v, or now if that has passed); the spare count is
//     the number of nodes idle at the shadow time beyond the head's k. A
//     later job, in arrival order, starts now if it fits and either its
//     estimated end (now + estimate / v on the nodes it would get) is no
//     later than the shadow time, or its task count is at most the spare
//     count (which it then uses up). The reservation is for a start time and
//     a number of nodes, not for particular nodes.
//
// Decisions use only estimates (Job.Estimate, an estimated processing
// time); the core never learns how long a job really runs until its caller
// reports it Finished. Estimators (Exact, Fuzzy, Learned) model what a site
// knows; see Estimator.
//
// # Calling order
//
// Times are offsets from an origin the caller chooses and must not go
// backwards. At one instant the caller reports every job that ended
// (Finished), then every job that arrived (Submit), then calls Schedule once
// and carries out every Start it returns before the next call.
package now
