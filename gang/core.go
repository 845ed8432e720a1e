package gang

import "time"

// Core is what every scheduler core offers the code that drives it (the
// simulator's event loop, the controller): events in with an explicit
// now, decisions out, nothing else. *Scheduler (the matrix) and
// gang/pfcfs's *Scheduler (preemptive FCFS) satisfy it; a driver written
// against it runs either. See Scheduler's methods for the contract:
// report every ended job, then every arrival, then call Schedule once per
// instant; times never go backwards.
type Core interface {
	// Submit adds an arriving job to the queue.
	Submit(j Job, now time.Duration) error
	// Finished removes a queued or running job (ended, failed, cancelled).
	Finished(id JobID, now time.Duration) error
	// Schedule runs a pass and returns its decisions, in an order safe to
	// carry out one by one.
	Schedule(now time.Duration) ([]Decision, error)
	// NextWakeup is when the core next wants a pass without an event
	// (a reservation, a quantum); ok is false when it does not.
	NextWakeup() (t time.Duration, ok bool)
	// Explain says why a queued job waits.
	Explain(id JobID) Explanation
}

var _ Core = (*Scheduler)(nil)
