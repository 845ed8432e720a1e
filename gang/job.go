package gang

import (
	"fmt"
	"time"
)

// JobID identifies a job within one Scheduler. The caller chooses IDs; they
// must be unique among the jobs the Scheduler currently knows.
type JobID int64

// Job is what the core knows about a job: its shape and its estimate. The
// job's real runtime is not part of it; the core learns when a job ends only
// through Finished.
type Job struct {
	ID JobID
	// Submit is the caller's submit time for the job. The core orders its
	// queue by the order of Submit calls, not by this field, and rejects a job
	// whose Submit lies in the future of the call.
	Submit time.Duration
	// Processors is the number of columns the job occupies (one process per
	// column). It must be at least 1 and at most Machine.Processors.
	Processors int
	// Estimate is the user's runtime estimate (the time limit). It drives
	// reservations; with Config.EnforceLimits the job is killed when it has
	// run this long. Zero is allowed (a job that ends at once).
	Estimate time.Duration
	// Memory is the memory each of the job's processes needs, in bytes. Zero
	// means no constraint.
	Memory int64
	// User names the owner; policies may use it, and explanations show it.
	User string
	// Template is the job's optional ⟨g,v,comm,sync⟩ benchmark template in
	// its text form (e.g. "50ms,25ms,news,NB"). The core does not interpret
	// it; package bench owns its syntax and meaning.
	Template string
	// Extend makes the estimate only an estimate: with
	// Config.EnforceLimits the job is not killed when it has run this long,
	// it runs on (Slurm's OverTimeLimit without a bound). Reservations still
	// treat it as ending at its estimate, then as ending "now".
	Extend bool
}

func (j *Job) String() string {
	return fmt.Sprintf("job %d (%d procs, estimate %v)", j.ID, j.Processors, j.Estimate)
}

// Machine describes the processors the core schedules.
type Machine struct {
	// Processors is the number of columns of the matrix.
	Processors int
	// MemoryPerProcessor is the memory of one column, in bytes. Zero means
	// memory is not constrained.
	MemoryPerProcessor int64
}
