package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/ctxio"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/jss/swf"
)

// NoTemplates is the Settings.Workload of jobs without a benchmark
// template.
const NoTemplates = "none"

// Settings is a workload as a command line writes it: the benchmark
// workload by name, the memory sizes with units (256MB, 1GiB). Config
// holds the other fields; Parse sets its templates and memory sizes.
type Settings struct {
	Config
	Workload   string // a named workload (bench.LookupWorkload), or NoTemplates
	MemMean    string // mean memory per process; "0" for none
	MemPerProc string // a processor's memory: no process needs more
}

// Parse reads s into a configuration (the built-in model when s has none)
// and validates it (Config.Validate), reporting every problem at once,
// keyed by Config's fields (Workload for the workload's name).
func (s Settings) Parse() (Config, error) {
	c := s.Config
	if len(c.Model.Classes) == 0 {
		c.Model = Builtin()
	}
	var errs []error
	if !strings.EqualFold(s.Workload, NoTemplates) {
		w, err := bench.LookupWorkload(s.Workload)
		if err != nil {
			errs = append(errs, fielderr.New("Workload", strconv.Quote(s.Workload), "unknown workload (valid: %s, %s)", bench.WorkloadNames(), NoTemplates))
		}
		c.Templates = w.Templates
	}
	// The memory sizes are checked here, as written, not by Validate.
	for _, e := range fielderr.All(c.Validate()) {
		if e.Field != "MemoryMean" && e.Field != "MemoryMax" {
			errs = append(errs, e)
		}
	}
	var meanErr, maxErr error
	if c.MemoryMean, meanErr = textvalue.Size(s.MemMean); meanErr != nil {
		errs = append(errs, fielderr.New("MemoryMean", strconv.Quote(s.MemMean), "%v", meanErr))
	}
	if c.MemoryMax, maxErr = textvalue.Size(s.MemPerProc); maxErr != nil {
		errs = append(errs, fielderr.New("MemoryMax", strconv.Quote(s.MemPerProc), "%v", maxErr))
	}
	if meanErr == nil && maxErr == nil && c.MemoryMean > c.MemoryMax {
		errs = append(errs, fielderr.New("MemoryMean", s.MemMean, "no room: more than {MemoryMax} %s, a processor's memory", s.MemPerProc))
	}
	return c, errors.Join(errs...)
}

// Generate writes c's workload to w as an SWF file (WriteSWF), failing
// with ctx's cause once ctx is done, and returns how many jobs it wrote.
func Generate(ctx context.Context, w io.Writer, c Config) (int, error) {
	gen, err := NewGenerator(c)
	if err != nil {
		return 0, err
	}
	return WriteSWF(ctxio.Writer(ctx, w), gen, c)
}

// bytesPerJob is a generous size of one job line of WriteSWF, for the
// free-space check (measured: 110 bytes with memory).
const bytesPerJob = 128

// GenerateFile is Generate into the file at path, refused when its file
// system lacks the room (a file that cannot fit would fill the disk
// before failing) and written atomically: a failed or interrupted run
// leaves no file.
func GenerateFile(ctx context.Context, path string, c Config) (int, error) {
	if err := atomicfile.CheckSpace(path, int64(c.Jobs)*bytesPerJob); err != nil {
		return 0, fmt.Errorf("workload: %s: %w", path, err)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return 0, fmt.Errorf("workload: %w", err)
	}
	defer f.Abort()
	n, err := Generate(ctx, f, c)
	if err != nil {
		return n, err
	}
	return n, f.Commit()
}

// FitInput fits a Model to the SWF trace at path, or standard input for
// swf.StdinPath (swf.OpenInput), as FitSWF does; the model's Source is
// swf.InputName(path).
func FitInput(ctx context.Context, path string, stdin io.Reader, processors int) (Model, error) {
	rd, closer, err := swf.OpenInput(ctx, path, stdin)
	if err != nil {
		return Model{}, err
	}
	defer closer.Close()
	return FitSWF(rd, swf.InputName(path), processors)
}

// FitSettings are a fit as a command line asks for it.
type FitSettings struct {
	Trace      string // the SWF trace: a file, or swf.StdinPath (FitInput)
	Processors int    // the trace's machine size; 0 for its header's
	Format     string // how the model is written (Formats)
}

// Validate reports every problem at once, keyed by field.
func (s FitSettings) Validate() error {
	var errs []error
	if s.Trace == "" {
		errs = append(errs, fielderr.New("Trace", nil, "required: the SWF trace to fit"))
	}
	if s.Processors < 0 || s.Processors > gang.MaxProcessors {
		errs = append(errs, fielderr.New("Processors", s.Processors, "must be from 1 to %d", gang.MaxProcessors))
	}
	if !slices.Contains(Formats(), s.Format) {
		errs = append(errs, fielderr.New("Format", strconv.Quote(s.Format), "want %s", strings.Join(Formats(), " or ")))
	}
	return errors.Join(errs...)
}

// Formats are the forms Model.Write writes.
func Formats() []string { return []string{"json", "table"} }

// Write writes the model in format json (WriteJSON) or table (WriteTable),
// all at once: nothing is written on an error.
func (m Model) Write(w io.Writer, format string) error {
	var b strings.Builder
	switch format {
	case "json":
		if err := m.WriteJSON(&b); err != nil {
			return err
		}
	case "table":
		m.WriteTable(&b)
	default:
		return fmt.Errorf("workload: unknown format %q (valid: %s)", format, strings.Join(Formats(), ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
