package rank

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
)

// Settings are a rank's run as a command line gives it (cosched
// bench-rank's flags): values still to parse, and which of them were
// given. Program checks them all.
type Settings struct {
	// Template is the ⟨g,v,comm,sync⟩ template; not given, the one the
	// agent sets in $COSCHED_BENCH (bench.EnvTemplate).
	Template string
	// Iterations, or Runtime, a target dedicated runtime that sets the
	// iterations from the job's size: exactly one of them is given.
	Iterations int
	Runtime    time.Duration
	Seed       uint64 // not given: the job id
	Work       string // cpu or wall (ParseWork)
	// MessageSize is a size with units (4KiB), HeaderSize to
	// comm.MaxMessage bytes.
	MessageSize string
	// Given reports whether the field of that name ("Template",
	// "Iterations", "Runtime", "Seed") was given.
	Given func(field string) bool
}

// Program is the rank the settings describe, or every problem at once,
// each a *fielderr.Error keyed by its field (TemplateEnv: the template
// from $COSCHED_BENCH).
func (s Settings) Program() (Program, error) {
	var errs []error
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	var p Program
	var err error
	switch env := os.Getenv(bench.EnvTemplate); {
	case s.Given("Template"):
		if p.Config.Template, err = bench.ParseTemplate(s.Template); err != nil {
			bad("Template", nil, "%v", err)
		}
	case env != "":
		if p.Config.Template, err = bench.ParseTemplate(env); err != nil {
			bad("TemplateEnv", nil, "%v", err)
		}
	default:
		bad("Template", nil, "required when $%s is not set (e.g. {Template} 50ms,25ms,news,NB)", bench.EnvTemplate)
	}
	both := []fielderr.Term{{Field: "Iterations"}, {Field: "Runtime"}}
	switch its, rt := s.Given("Iterations"), s.Given("Runtime"); {
	case its && rt:
		errs = append(errs, fielderr.Several(" and ", both, "give one of them, not both"))
	case !its && !rt:
		errs = append(errs, fielderr.Several(" or ", both, "required: give {Iterations} N or {Runtime} D"))
	case its && s.Iterations < 1:
		bad("Iterations", s.Iterations, "must be at least 1")
	case rt && s.Runtime <= 0:
		bad("Runtime", s.Runtime, "must be positive")
	case its:
		p.Config.Iterations = s.Iterations
	default:
		p.Runtime = s.Runtime
	}
	if p.Config.Work, err = ParseWork(s.Work); err != nil {
		bad("Work", strconv.Quote(s.Work), "want cpu or wall")
	}
	size, err := textvalue.Size(s.MessageSize)
	if err != nil || size < HeaderSize || size > comm.MaxMessage {
		bad("MessageSize", strconv.Quote(s.MessageSize), "want a size from %d to %d bytes (e.g. 4KiB)", HeaderSize, comm.MaxMessage)
	}
	p.Config.MessageSize = int(size)
	p.Config.Seed, p.SeedFromJob = s.Seed, !s.Given("Seed")
	return p, errors.Join(errs...)
}

// JobProgram is a rank of the benchmark job its agent hands it, encoded
// in $COSCHED_BENCH_JOB (bench.EnvJob).
func JobProgram(encoded string) (Program, error) {
	j, err := bench.DecodeJob(encoded)
	if err != nil {
		return Program{}, err
	}
	cfg, err := ConfigOf(j)
	return Program{Config: cfg}, err
}
