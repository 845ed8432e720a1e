package jss

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cosched/cosched/jss/swf"
)

// TraceError is a problem of the trace itself (unreadable, corrupt, no
// machine size, no job left to simulate): the same whatever the policy,
// so Compare reports it once, not as a policy's failure.
type TraceError struct {
	Trace string
	Err   error
}

func (e *TraceError) Error() string { return e.Err.Error() }
func (e *TraceError) Unwrap() error { return e.Err }

// ErrNoJobs is a trace none of whose jobs can be simulated (errors.Is):
// empty, or every job dropped.
var ErrNoJobs = errors.New("no job to simulate")

// noJobs is ErrNoJobs for a trace with counts c, naming why every job
// was dropped.
func noJobs(name string, c SourceCounts) error {
	if c.Read == 0 {
		return &TraceError{name, fmt.Errorf("%s: %w: the trace has no job lines", name, ErrNoJobs)}
	}
	return &TraceError{name, fmt.Errorf("%s: %w: %d read, every one dropped: %s", name, ErrNoJobs, c.Read, c.Dropped)}
}

// String lists the reasons jobs were dropped, with their counts ("1
// wider than the machine (--procs), 1 with no runtime"); "" when none was.
func (d Dropped) String() string {
	return d.Format(func(n int64) string { return strconv.FormatInt(n, 10) })
}

// Format is String with each count written by count (a report's
// thousands separators, say).
func (d Dropped) Format(count func(int64) string) string {
	var parts []string
	add := func(n int64, what string) {
		if n > 0 {
			parts = append(parts, count(n)+" "+what)
		}
	}
	add(d.NoProcessors, "with no processor count")
	add(d.TooWide, "wider than the machine (--procs)")
	add(d.NoRuntime, "with no runtime")
	add(d.NoSubmit, "with no submit time")
	add(d.Unsorted, "out of submit order")
	add(d.Malformed, "malformed lines")
	add(d.NoHost, "fitting no host (processors and memory)")
	return strings.Join(parts, ", ")
}

// CheckTrace reads the trace of opt once as every policy's run reads it
// (machine size, conventions, lenience) and returns the counts of its
// jobs, or a *TraceError: what is wrong with the trace, whatever the
// policy, including a trace that leaves no job to simulate.
func CheckTrace(ctx context.Context, opt TraceOptions) (SourceCounts, error) {
	name := opt.Input.Name
	fail := func(err error) (SourceCounts, error) { return SourceCounts{}, &TraceError{name, err} }
	var ropts []swf.Option
	if opt.Lenient {
		ropts = append(ropts, swf.WithLenient())
	}
	rd, closer, err := opt.Input.Open(ctx, ropts...)
	if err != nil {
		return fail(err)
	}
	defer closer.Close()
	procs, _, err := MachineSize(opt.Processors, rd.Header())
	if err != nil {
		return fail(fmt.Errorf("%s: %w", name, err))
	}
	src, err := NewSWFSource(rd, SWFSourceOptions{Name: name, Processors: procs, Conventions: opt.Conventions, Lenient: opt.Lenient})
	if err != nil {
		return fail(err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return SourceCounts{}, err
		}
		if _, err := src.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fail(err)
		}
	}
	c := src.Counts()
	if c.Delivered == 0 {
		return c, noJobs(name, c)
	}
	return c, nil
}
