package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EnvJob is the variable an agent gives each rank of a benchmark job: the
// job (Job.Encode), which the rank program decodes (DecodeJob).
const EnvJob = "COSCHED_BENCH_JOB"

// EnvTemplate is the variable an agent gives each rank of a benchmark job:
// its template, as submitted.
const EnvTemplate = "COSCHED_BENCH"

// MaxIterations bounds a benchmark job's iterations.
const MaxIterations = 1_000_000_000

// Job is a benchmark job's program as it travels from its submission to its
// ranks: the controller puts it in the agents' launch order, and the agent
// hands it to every rank in EnvJob. It is never turned into a command line.
type Job struct {
	Template   Template `json:"template" msgpack:"template"`
	Iterations int      `json:"iterations" msgpack:"iterations"` // at least 1
	Seed       uint64   `json:"seed" msgpack:"seed"`             // keys the compute draws (Draw)
	// Work is what a compute phase does: "cpu" (burn CPU time; "" too)
	// or "wall" (wait, excluding stopped time).
	Work string `json:"work,omitempty" msgpack:"work,omitempty"`
}

// Validate reports every problem with the job.
func (j Job) Validate() error {
	var errs []error
	if err := j.Template.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("template: %w", err))
	}
	if j.Iterations < 1 {
		errs = append(errs, fmt.Errorf("iterations %d: must be at least 1", j.Iterations))
	}
	if j.Work != "" && j.Work != "cpu" && j.Work != "wall" {
		errs = append(errs, fmt.Errorf("work %q: want cpu or wall", j.Work))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: job: %w", err)
	}
	return nil
}

// Encode is the job as EnvJob carries it (JSON).
func (j Job) Encode() string {
	b, _ := json.Marshal(j) // plain fields: cannot fail
	return string(b)
}

// DecodeJob reads what Encode wrote and validates it.
func DecodeJob(s string) (Job, error) {
	var j Job
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return Job{}, fmt.Errorf("bench: job: %w", err)
	}
	return j, j.Validate()
}

// RuntimeEstimate is the job's expected dedicated runtime on procs
// processes over net: its iterations times IterationEstimate. A benchmark
// job submitted without a time limit gets it as its estimate.
func (j Job) RuntimeEstimate(procs int, net Network) time.Duration {
	return time.Duration(j.Iterations) * IterationEstimate(j.Template, procs, net)
}

// Defaults gives a job of procs processes submitted with a target
// dedicated runtime instead of its iterations (Iterations 0) the
// iterations that take that long over the default network, and returns
// its expected runtime there: the time limit, an estimate, of a job
// submitted without one.
func (j *Job) Defaults(procs int, runtime time.Duration) time.Duration {
	net := DefaultNetwork()
	if j.Iterations == 0 {
		j.Iterations = Iterations(j.Template, procs, net, runtime)
	}
	return j.RuntimeEstimate(procs, net)
}
