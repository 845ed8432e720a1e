package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/internal/fielderr"
)

// fields lists the fields of every *fielderr.Error in err.
func fields(err error) []string {
	var out []string
	for _, e := range fielderr.All(err) {
		out = append(out, e.Field)
	}
	return out
}

// Validate keys every problem by its field, and its text names them as
// JSON does: what the API answers a bad submission with.
func TestValidateKeysFieldsAndSpeaksJSON(t *testing.T) {
	s := JobSpec{Bench: "10ms,5ms,news,NB", Command: []string{"x"}, BenchWork: "gpu", MPI: "pmi2", Processors: 5, Memory: -1, Dir: "rel"}
	err := s.Validate(4)
	want := []string{"Command", "MPI", "Processors", "TimeLimit", "Memory", "Dir"}
	if got := fields(err); !slices.Equal(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	if want := `invalid job: command: a benchmark job (bench) runs bench-rank, not a command; mpi: "pmi2", want none, pmi1, pmix or cosched; ` +
		`processors: 5, more than the cluster's 4 processors; time_limit: 0s, must be positive; memory: -1, must not be negative; ` +
		`dir: "rel", want an absolute path of at most 4096 bytes`; err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
	s = JobSpec{Bench: "10ms,5ms,news,NB", BenchIterations: bench.MaxIterations + 1, BenchWork: "gpu", Processors: 0, TimeLimit: Duration{time.Minute}}
	if err := s.Validate(-1); !slices.Equal(fields(err), []string{"BenchIterations", "BenchWork", "Processors"}) ||
		!strings.Contains(err.Error(), `bench_iterations: 1000000001, must be from 1 to 1000000000; bench_work: "gpu", want cpu or wall; processors: 0, must be from 1 to 1048576`) {
		t.Errorf("bench job: %v", err)
	}
	good := JobSpec{Command: []string{"true"}, Processors: 1, TimeLimit: Duration{time.Minute}}
	if err := good.Validate(1); err != nil {
		t.Errorf("good spec: %v", err)
	}
	// cosched's MPI library: any command; a benchmark job speaks comm.
	mpi := JobSpec{Command: []string{"./a.out"}, MPI: MPICosched, Processors: 1, TimeLimit: Duration{time.Minute}}
	if err := mpi.Validate(1); err != nil {
		t.Errorf("--mpi cosched: %v", err)
	}
	mpi = JobSpec{Bench: "10ms,5ms,news,NB", BenchIterations: 1, MPI: MPICosched, Processors: 1, TimeLimit: Duration{time.Minute}}
	if err := mpi.Validate(1); !slices.Equal(fields(err), []string{"MPI"}) || !strings.Contains(err.Error(), "speaks comm, not MPI") {
		t.Errorf("a benchmark job on cosched's MPI: %v", err)
	}
	if m, err := ParseMPI("cosched"); m != MPICosched || err != nil {
		t.Errorf("ParseMPI(cosched) = %q, %v", m, err)
	}
}

// A submission's texts are parsed, a benchmark job gets its name,
// iterations and limit, and every problem is reported once, by its field.
func TestSubmissionJobSpec(t *testing.T) {
	sub := Submission{Spec: JobSpec{Bench: "10ms,0,transpose,B", Processors: 4, BenchWork: "cpu"}, BenchRuntime: time.Minute, Memory: "1KiB", Export: "NONE,A"}
	spec, err := sub.JobSpec([]string{"A=1", "B=2"})
	tp, _ := bench.ParseTemplate(sub.Spec.Bench)
	j := bench.Job{Template: tp}
	limit := j.Defaults(4, time.Minute)
	if err != nil || spec.Name != "bench:10ms,0,transpose,B" || spec.BenchIterations != j.Iterations || spec.TimeLimit.D != limit ||
		spec.Overrun != "extend" || spec.Memory != 1024 || !slices.Equal(spec.Env, []string{"A=1"}) {
		t.Errorf("benchmark job: %+v, %v", spec, err)
	}
	sub = Submission{Spec: JobSpec{Command: []string{"true"}, Processors: 2}, Nodes: 3, TimeLimit: "1:2:3:4", Memory: "lots", Export: "NONE"}
	_, err = sub.JobSpec(nil)
	if got := fields(err); !slices.Equal(got, []string{"Processors", "TimeLimit", "Memory"}) {
		t.Errorf("bad submission: fields %v (%v)", got, err)
	}
	for _, want := range []string{"Processors 2: fewer tasks than Nodes 3 nodes", `TimeLimit "1:2:3:4": want MM, MM:SS`, `Memory "lots": not a memory size`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	// Without a runtime or iterations, a benchmark job has no estimate:
	// that is the one error, not its missing limit or iterations too.
	sub = Submission{Spec: JobSpec{Bench: "10ms,0,transpose,B", Processors: 1}, Export: "NONE"}
	if _, err := sub.JobSpec(nil); !slices.Equal(fields(err), []string{"Bench"}) {
		t.Errorf("no runtime: %v", err)
	}
}

// A task count out of range is said to be out of range, also with -N:
// not that it is fewer than the nodes, which hides what is wrong.
func TestSubmissionBadTasksWithNodes(t *testing.T) {
	sub := Submission{Spec: JobSpec{Command: []string{"true"}, Processors: -5}, Nodes: 2, TimeLimit: "1", Export: "NONE"}
	_, err := sub.JobSpec(nil)
	if err == nil || !strings.Contains(err.Error(), "Processors -5: must be from 1 to") || strings.Contains(err.Error(), "fewer tasks") {
		t.Errorf("-n -5 -N 2: %v", err)
	}
}

// A target runtime that takes too many iterations is said of the runtime
// given, not of iterations the user never gave.
func TestSubmissionRuntimeTooManyIterations(t *testing.T) {
	sub := Submission{Spec: JobSpec{Bench: "1ns,0,news,NB", Processors: 2, BenchWork: "cpu"}, BenchRuntime: 1000 * time.Hour, Export: "NONE"}
	_, err := sub.JobSpec(nil)
	if got := fields(err); !slices.Equal(got, []string{"BenchRuntime"}) || !strings.Contains(err.Error(), "more than 1000000000") {
		t.Errorf("fields %v: %v", got, err)
	}
}
