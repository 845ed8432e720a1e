package api

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/slurmtime"
	"github.com/cosched/cosched/internal/textvalue"
)

// Submission is a job as a user submits it (cosched submit's flags): the
// spec, the settings given as text still to parse, sbatch's node count and
// a benchmark job's target runtime. JobSpec checks it all.
type Submission struct {
	Spec JobSpec
	// Nodes, when not 0, is sbatch's -N: the job must have at least as
	// many processors (a caller whose user gave no count gives one per
	// node, as sbatch).
	Nodes int
	// TimeLimit is Slurm's MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or
	// D-HH:MM:SS, or a Go duration. A benchmark job without one gets its
	// expected runtime, an estimate (Overrun extend, unless set).
	TimeLimit string
	Memory    string // per process, a size with units (256MB); "": no limit
	Export    string // sbatch's --export (ExportEnv)
	// BenchRuntime is a benchmark job's target dedicated runtime, which
	// sets its iterations: a benchmark job has it or Spec.BenchIterations.
	BenchRuntime time.Duration
}

// JobSpec is the spec to submit: the texts parsed, environ's variables
// exported, a benchmark job's name, iterations and limit defaulted. A bad
// submission gets every problem at once, each a *fielderr.Error keyed by
// its field of Submission or of JobSpec (Validate's).
func (s Submission) JobSpec(environ []string) (JobSpec, error) {
	spec := s.Spec
	var errs []error
	var unparsed []string // fields whose text did not parse: Validate's word on them is noise
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
		unparsed = append(unparsed, field)
	}
	switch {
	case s.Nodes < 0 || s.Nodes > gang.MaxProcessors:
		bad("Nodes", s.Nodes, "must be from 1 to %d", gang.MaxProcessors)
	case spec.Processors >= 1 && spec.Processors < s.Nodes: // a count out of range is Validate's to report
		bad("Processors", spec.Processors, "fewer tasks than {Nodes} %d nodes", s.Nodes)
	}
	if s.BenchRuntime < 0 || s.BenchRuntime > slurmtime.Max {
		bad("BenchRuntime", s.BenchRuntime, "must be from 0s to %dh", int(slurmtime.Max.Hours()))
	}
	if spec.Bench != "" && (s.BenchRuntime > 0) == (spec.BenchIterations > 0) {
		errs = append(errs, fielderr.New("Bench", nil, "needs exactly one of {BenchRuntime} and {BenchIterations}"))
	}
	limit, estimated := s.benchDefaults(&spec)
	if estimated && s.BenchRuntime > 0 && spec.BenchIterations > bench.MaxIterations { // the runtime's fault: no iterations were given
		bad("BenchRuntime", s.BenchRuntime, "takes %d iterations, more than %d", spec.BenchIterations, bench.MaxIterations)
		unparsed = append(unparsed, "BenchIterations")
		if s.TimeLimit == "" {
			unparsed = append(unparsed, "TimeLimit") // the estimate of those iterations
		}
	}
	if !estimated && spec.BenchIterations == 0 {
		unparsed = append(unparsed, "BenchIterations") // unknown: the other errors say why
	}
	var err error
	switch {
	case s.TimeLimit == "" && estimated:
		spec.TimeLimit.D = limit
		spec.Overrun = cmp.Or(spec.Overrun, "extend")
	case s.TimeLimit == "" && spec.Bench != "":
		unparsed = append(unparsed, "TimeLimit") // its estimate is unknown: the other errors say why
	default:
		if spec.TimeLimit.D, err = slurmtime.Parse(s.TimeLimit); err != nil {
			// The field names the text: the parser's own naming of it is noise.
			reason := strings.TrimPrefix(err.Error(), fmt.Sprintf("time limit %q: ", strings.TrimSpace(s.TimeLimit)))
			bad("TimeLimit", strconv.Quote(s.TimeLimit), "%s", reason)
		}
	}
	if s.Memory != "" {
		if spec.Memory, err = textvalue.Size(s.Memory); err != nil {
			bad("Memory", strconv.Quote(s.Memory), "%v", err)
		}
	}
	if spec.Env, err = ExportEnv(s.Export, environ); err != nil {
		bad("Env", nil, "%v", err)
	}
	for _, e := range fielderr.All(spec.Validate(-1)) {
		if !slices.Contains(unparsed, e.Field) {
			errs = append(errs, e)
		}
	}
	return spec, errors.Join(errs...)
}

// benchDefaults gives a benchmark job its name and, from a target
// runtime, its iterations, and returns its expected runtime; ok is false
// when the job is too wrong to be estimated (JobSpec reports why).
func (s Submission) benchDefaults(spec *JobSpec) (limit time.Duration, ok bool) {
	if spec.Bench == "" {
		return 0, false
	}
	spec.Name = cmp.Or(spec.Name, "bench:"+spec.Bench)
	t, err := bench.ParseTemplate(spec.Bench)
	oneOf := (s.BenchRuntime > 0) != (spec.BenchIterations > 0)
	inRange := s.BenchRuntime <= slurmtime.Max && spec.BenchIterations >= 0 && spec.BenchIterations <= bench.MaxIterations &&
		spec.Processors >= 1 && spec.Processors <= gang.MaxProcessors
	if err != nil || !oneOf || !inRange {
		return 0, false
	}
	j := bench.Job{Template: t, Iterations: spec.BenchIterations}
	limit = j.Defaults(spec.Processors, s.BenchRuntime)
	spec.BenchIterations = j.Iterations
	return limit, true
}
