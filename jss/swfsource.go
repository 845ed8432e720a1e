package jss

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/jss/swf"
)

// ProcessorsFrom selects the SWF field that gives a job's size.
type ProcessorsFrom string

// Processor-field conventions.
const (
	// ProcsRequested: field 8 (requested processors), else field 5 (allocated).
	ProcsRequested ProcessorsFrom = "requested"
	// ProcsAllocated: field 5 (allocated processors), else field 8 (requested).
	ProcsAllocated ProcessorsFrom = "allocated"
)

// EstimateFrom selects a job's runtime estimate.
type EstimateFrom string

// Estimate conventions.
const (
	// EstimateRequested: field 9 (requested time), else the runtime.
	EstimateRequested EstimateFrom = "requested"
	// EstimateExact: the runtime itself (perfect estimates).
	EstimateExact EstimateFrom = "exact"
)

// Overrun says what to do with a job whose runtime exceeds its estimate.
type Overrun string

// Overrun conventions.
const (
	// OverrunExtend raises the estimate to the runtime.
	OverrunExtend Overrun = "extend"
	// OverrunKill truncates the runtime at the estimate, as a scheduler
	// enforcing time limits would; the job counts as killed.
	OverrunKill Overrun = "kill"
)

// Conventions turn SWF records into jobs. The zero value is not valid; use
// DefaultConventions.
type Conventions struct {
	Processors ProcessorsFrom
	Estimate   EstimateFrom
	Overrun    Overrun
}

// DefaultConventions: size from field 8 else 5, estimate from field 9 else
// the runtime, overruns extended.
func DefaultConventions() Conventions {
	return Conventions{Processors: ProcsRequested, Estimate: EstimateRequested, Overrun: OverrunExtend}
}

// Validate reports every unknown convention at once, keyed by field
// (fielderr).
func (c Conventions) Validate() error {
	var errs []error
	if c.Processors != ProcsRequested && c.Processors != ProcsAllocated {
		errs = append(errs, fielderr.New("Processors", strconv.Quote(string(c.Processors)), "want %s or %s", ProcsRequested, ProcsAllocated))
	}
	if _, err := c.Estimate.rule(); err != nil {
		errs = append(errs, fielderr.New("Estimate", strconv.Quote(string(c.Estimate)), "want requested, exact (or actual), actual+K%% (e.g. actual+20%%) or abort"))
	}
	if c.Overrun != OverrunExtend && c.Overrun != OverrunKill {
		errs = append(errs, fielderr.New("Overrun", strconv.Quote(string(c.Overrun)), "want %s or %s", OverrunExtend, OverrunKill))
	}
	return errors.Join(errs...)
}

// MachineSize resolves the simulated machine's processors: the flag value if
// positive, else the header's MaxProcs, else its MaxNodes. from says which.
func MachineSize(flag int, h *swf.Header) (procs int, from string, err error) {
	switch {
	case flag > 0:
		return flag, "--procs", nil
	case h != nil && h.MaxProcs > 0:
		return int(h.MaxProcs), "MaxProcs", nil
	case h != nil && h.MaxNodes > 0:
		return int(h.MaxNodes), "MaxNodes", nil
	}
	return 0, "", errors.New("machine size unknown: the trace header has neither MaxProcs nor MaxNodes; pass --procs")
}

// Dropped counts the jobs a source left out, by reason. None is left out
// silently: every count appears in reports.
type Dropped struct {
	NoProcessors int64 `json:"no_processors"` // neither size field is known and positive
	TooWide      int64 `json:"too_wide"`      // wider than the simulated machine
	NoRuntime    int64 `json:"no_runtime"`    // runtime unknown
	NoSubmit     int64 `json:"no_submit"`     // submit time unknown
	Unsorted     int64 `json:"unsorted"`      // submitted before the previous job (lenient mode)
	Malformed    int64 `json:"malformed"`     // unparsable lines (or header values) skipped (lenient mode)
	NoHost       int64 `json:"no_host"`       // hosts of different sizes: no host has both its processors and its memory
}

// Total returns the number of dropped jobs.
func (d Dropped) Total() int64 {
	return d.NoProcessors + d.TooWide + d.NoRuntime + d.NoSubmit + d.Unsorted + d.Malformed + d.NoHost
}

// SourceCounts describes what a source read and changed.
type SourceCounts struct {
	Read      int64   `json:"read"`      // job lines read, malformed ones included
	Delivered int64   `json:"delivered"` // jobs handed to the simulator
	Dropped   Dropped `json:"dropped"`
	Extended  int64   `json:"estimates_extended"` // overrun: estimate raised to the runtime
	Truncated int64   `json:"runtimes_truncated"` // overrun: runtime cut at the estimate
}

// SWFSource delivers the jobs of an SWF trace under a set of conventions.
// When the header lists benchmark templates (TemplateKey), a job's field
// 14 selects its template.
type SWFSource struct {
	r        *swf.Reader
	name     string
	procs    int
	conv     Conventions
	estimate estimateRule
	lenient  bool
	keep     bool
	tpls     map[int]bench.Template // from the header's Template lines
	users    []string               // user ID → its name, formatted once (IDs below maxUserNames)
	prev     float64                // previous delivered submit time
	counts   SourceCounts
}

// SWFSourceOptions configures NewSWFSource.
type SWFSourceOptions struct {
	Name        string // for error messages
	Processors  int    // the simulated machine: wider jobs are dropped
	Conventions Conventions
	// Lenient drops a job submitted before its predecessor (counted) instead
	// of failing. Malformed lines are governed by the reader's own option.
	Lenient bool
	// KeepRecords attaches each job's SWF record (Job.Record), which an SWF
	// writer needs; without it the source allocates nothing per job.
	KeepRecords bool
}

// NewSWFSource returns a Source reading r.
func NewSWFSource(r *swf.Reader, opt SWFSourceOptions) (*SWFSource, error) {
	if err := opt.Conventions.Validate(); err != nil {
		return nil, fmt.Errorf("jss: %w", err)
	}
	if opt.Processors < 1 {
		return nil, fmt.Errorf("jss: machine processors must be at least 1, got %d", opt.Processors)
	}
	tpls, err := ReadTemplates(r.Header())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt.Name, err)
	}
	rule, _ := opt.Conventions.Estimate.rule() // validated above
	return &SWFSource{r: r, name: opt.Name, procs: opt.Processors, conv: opt.Conventions, estimate: rule, lenient: opt.Lenient, keep: opt.KeepRecords, tpls: tpls, prev: math.Inf(-1)}, nil
}

// Counts returns what the source has read, delivered and dropped so far.
func (s *SWFSource) Counts() SourceCounts {
	c := s.counts
	c.Dropped.Malformed = int64(s.r.Skipped())
	c.Read += c.Dropped.Malformed
	return c
}

// Next implements Source.
func (s *SWFSource) Next() (Job, error) {
	for {
		rec, err := s.r.Next()
		if err != nil {
			return Job{}, err // io.EOF, or a ParseError naming file:line:field
		}
		s.counts.Read++
		j, ok, err := s.convert(&rec)
		if err != nil {
			return Job{}, err
		}
		if ok {
			s.counts.Delivered++
			return j, nil
		}
	}
}

func (s *SWFSource) convert(rec *swf.Record) (Job, bool, error) {
	drop := &s.counts.Dropped
	procs := rec.RequestedProcessors
	alt := rec.AllocatedProcessors
	if s.conv.Processors == ProcsAllocated {
		procs, alt = alt, procs
	}
	if procs <= 0 {
		procs = alt
	}
	switch {
	case rec.SubmitTime < 0:
		drop.NoSubmit++
		return Job{}, false, nil
	case rec.RunTime < 0:
		drop.NoRuntime++
		return Job{}, false, nil
	case procs <= 0:
		drop.NoProcessors++
		return Job{}, false, nil
	case math.Ceil(procs) > float64(s.procs):
		drop.TooWide++
		return Job{}, false, nil
	}
	if rec.SubmitTime < s.prev {
		if s.lenient {
			drop.Unsorted++
			return Job{}, false, nil
		}
		return Job{}, false, &swf.ParseError{File: s.name, Line: rec.Line, Field: 2,
			Value: strconv.FormatFloat(rec.SubmitTime, 'f', -1, 64),
			Err:   fmt.Errorf("%w: submitted before the previous job (%s); SWF lines must be in submit order (--lenient drops such jobs)", ErrUnsorted, strconv.FormatFloat(s.prev, 'f', -1, 64))}
	}
	s.prev = rec.SubmitTime

	runtime := seconds(rec.RunTime)
	estimate := s.estimate.estimate(rec, runtime)
	truncated := false
	if runtime > estimate {
		if s.conv.Overrun == OverrunKill {
			runtime, truncated = estimate, true
			s.counts.Truncated++
		} else {
			estimate = runtime
			s.counts.Extended++
		}
	}
	var mem int64
	if rec.RequestedMemory > 0 {
		mem = int64(rec.RequestedMemory * 1024)
	}
	user := ""
	if rec.UserID >= 0 {
		user = s.userName(rec.UserID)
	}
	var tpl string
	if len(s.tpls) > 0 && rec.Executable >= 1 {
		t, ok := s.tpls[int(rec.Executable)]
		if !ok {
			return Job{}, false, &swf.ParseError{File: s.name, Line: rec.Line, Field: 14,
				Value: strconv.FormatFloat(rec.Executable, 'f', -1, 64),
				Err:   fmt.Errorf("no \"; %s: %d …\" line in the header", TemplateKey, int(rec.Executable))}
		}
		tpl = t.String()
	}
	var keep *swf.Record
	if s.keep {
		r := *rec
		keep = &r
	}
	return Job{
		Job: gang.Job{
			Submit:     seconds(rec.SubmitTime),
			Processors: int(math.Ceil(procs)), // a fraction of a processor still takes one
			Estimate:   estimate,
			Memory:     mem,
			User:       user,
			Template:   tpl,
		},
		Number:    int64(rec.JobNumber),
		Runtime:   runtime,
		Truncated: truncated,
		Record:    keep,
	}, true, nil
}

// maxUserNames bounds the user IDs whose names SWFSource keeps for reuse:
// logs number their users from 1, and have hundreds.
const maxUserNames = 1 << 14

// userName formats a user ID (not negative), once per user for the usual
// small integral IDs: a job's name is its user's, so a job costs no
// allocation.
func (s *SWFSource) userName(id float64) string {
	if id >= maxUserNames || id != math.Trunc(id) || math.Signbit(id) {
		return strconv.FormatFloat(id, 'f', -1, 64)
	}
	i := int(id)
	if i >= len(s.users) {
		s.users = append(s.users, make([]string, i+1-len(s.users))...)
	}
	if s.users[i] == "" {
		s.users[i] = strconv.FormatFloat(id, 'f', -1, 64)
	}
	return s.users[i]
}

// seconds converts SWF seconds to a Duration, rounding to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// compile-time check
var _ Source = (*SWFSource)(nil)

// sliceSource serves jobs from memory; tests and generated workloads use it.
type sliceSource struct {
	jobs []Job
	i    int
}

// SliceSource returns a Source over jobs, which must be in submit order.
func SliceSource(jobs []Job) Source { return &sliceSource{jobs: jobs} }

func (s *sliceSource) Next() (Job, error) {
	var j Job
	err := s.nextInto(&j)
	return j, err
}

// nextInto is Next writing into *j (an intoSource).
func (s *sliceSource) nextInto(j *Job) error {
	if s.i >= len(s.jobs) {
		return io.EOF
	}
	*j = s.jobs[s.i]
	s.i++
	return nil
}
