package jss

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/swf"
)

// TraceInput names a trace and opens it for reading. Open is called once
// per run, so several policies can stream the same trace concurrently.
type TraceInput struct {
	Name string
	// Open's reads fail with ctx's cause once ctx is done (a run stops
	// when interrupted, also in a line that never ends).
	Open func(ctx context.Context, opts ...swf.Option) (*swf.Reader, io.Closer, error)
}

// FileInput reads the SWF file at path (gzip-compressed or not).
func FileInput(path string) TraceInput {
	return TraceInput{Name: path, Open: func(ctx context.Context, opts ...swf.Option) (*swf.Reader, io.Closer, error) {
		return swf.OpenContext(ctx, path, opts...)
	}}
}

// MaxStdinTrace bounds a trace read from standard input (InputFrom), which
// is held in memory; a larger trace is read from its file.
const MaxStdinTrace = 1 << 30

// InputFrom is the trace at path: "-" is stdin, read whole into memory
// (at most MaxStdinTrace bytes) so that several runs can stream it; any
// other path is the SWF file there, which must exist and not be a
// directory.
func InputFrom(path string, stdin io.Reader) (TraceInput, error) {
	if path != swf.StdinPath {
		if err := swf.CheckFile(path); err != nil {
			return TraceInput{}, err
		}
		return FileInput(path), nil
	}
	data, err := io.ReadAll(io.LimitReader(stdin, MaxStdinTrace+1))
	if err != nil {
		return TraceInput{}, fmt.Errorf("read standard input: %w", err)
	}
	if len(data) > MaxStdinTrace {
		return TraceInput{}, fmt.Errorf("standard input holds more than %d MiB: pass the file itself", MaxStdinTrace>>20)
	}
	return TraceInput{Name: swf.StdinName, Open: func(_ context.Context, opts ...swf.Option) (*swf.Reader, io.Closer, error) { // in memory: reads end
		return swf.OpenReader(bytes.NewReader(data), swf.StdinName, opts...)
	}}, nil
}

// TraceOptions configures SimulateTrace.
type TraceOptions struct {
	Input TraceInput
	// Processors overrides the machine size; 0 takes the header's MaxProcs,
	// else its MaxNodes.
	Processors  int
	Conventions Conventions
	// Lenient skips and counts malformed lines and out-of-order jobs
	// instead of failing.
	Lenient bool
	// Tau is the bounded-slowdown threshold (0: metrics.DefaultTau).
	Tau time.Duration
	// Check verifies every decision (see Config.Check).
	Check bool
	// Backfill configures the priority-backfill policies (BackfillFor).
	Backfill gang.Backfill
	// ByRuntimeBin adds the metrics of every runtime bin to the result.
	ByRuntimeBin bool
	// SWFOut and JobsCSV, when set, receive the simulated schedule.
	SWFOut  io.Writer
	JobsCSV io.Writer
	// Overlap reads the trace ahead and sorts the summary's two halves on
	// goroutines of their own, beside the simulation: for a run with a
	// core to spare (Compare sets it when fewer policies run at once than
	// there are cores). The result is the same either way.
	Overlap bool
	// Engine, when set, runs the simulation instead of Run under the named
	// policy: policies outside the matrix core (pfcfs) provide one.
	Engine func(ctx context.Context, processors int, src Source, emit func(Result) error) (Stats, error)
}

// TraceResult is one policy's run over a trace.
type TraceResult struct {
	Policy         gang.Policy     `json:"policy"`
	Trace          string          `json:"trace"`
	Processors     int             `json:"processors"`
	ProcessorsFrom string          `json:"processors_from"`
	Jobs           SourceCounts    `json:"jobs"`
	Metrics        metrics.Summary `json:"metrics"`
	// ByRuntime holds the metrics by runtime bin (TraceOptions.ByRuntimeBin).
	ByRuntime []metrics.Bin `json:"by_runtime_bin,omitempty"`
	Events    int64         `json:"events"`
	Passes    int64         `json:"passes"`
	// Skipped holds the first malformed lines skipped in lenient mode.
	Skipped []string `json:"skipped_lines,omitempty"`
	// PFCFS describes a pfcfs run (see SimulateTracePFCFS).
	PFCFS *PFCFSSummary `json:"pfcfs,omitempty"`
	// Hosts describes a run on hosts of different sizes (see
	// SimulateTraceHosts).
	Hosts *HostsSummary `json:"hosts,omitempty"`
}

// SimulateTrace runs one policy over a trace and computes its metrics.
func SimulateTrace(ctx context.Context, opt TraceOptions, policy gang.Policy) (TraceResult, error) {
	var ropts []swf.Option
	if opt.Lenient {
		ropts = append(ropts, swf.WithLenient())
	}
	rd, closer, err := opt.Input.Open(ctx, ropts...)
	if err != nil {
		return TraceResult{}, err
	}
	defer closer.Close()
	procs, from, err := MachineSize(opt.Processors, rd.Header())
	if err != nil {
		return TraceResult{}, fmt.Errorf("jss: %s: %w", opt.Input.Name, err)
	}
	src, err := NewSWFSource(rd, SWFSourceOptions{Name: opt.Input.Name, Processors: procs, Conventions: opt.Conventions, Lenient: opt.Lenient, KeepRecords: opt.SWFOut != nil})
	if err != nil {
		return TraceResult{}, err
	}

	col := metrics.NewCollector(procs, opt.Tau)
	col.Grow(expectedJobs(rd.Header()))
	var sinks []func(Result) error // the outputs besides the collector
	var flushers []func() error
	if opt.SWFOut != nil {
		note := fmt.Sprintf("simulated by cosched sim: policy %s on %d processors; field 3 is the simulated wait, field 4 the simulated runtime; jobs the simulation dropped are not listed", policy, procs)
		sw, err := NewSWFWriter(opt.SWFOut, rd.Header(), procs, note)
		if err != nil {
			return TraceResult{}, err
		}
		sinks = append(sinks, Ordered(sw.Write))
		flushers = append(flushers, sw.Flush)
	}
	if opt.JobsCSV != nil {
		cw, err := NewJobsCSVWriter(opt.JobsCSV)
		if err != nil {
			return TraceResult{}, err
		}
		sinks = append(sinks, Ordered(cw.Write))
		flushers = append(flushers, cw.Flush)
	}
	// The engine lends each result: the collector reads it in place, and
	// only the outputs (which may keep it) get a copy.
	emitRef := func(r *Result) error {
		col.Add(r.MetricsJob())
		for _, s := range sinks {
			if err := s(*r); err != nil {
				return err
			}
		}
		return nil
	}
	emit := func(r Result) error { return emitRef(&r) }

	var jobs Source = src
	var ahead *prefetcher
	summarize := col.Summary
	if opt.Overlap {
		// The trace is read ahead on a goroutine of its own while this
		// one simulates; it has ended before the source's counts are read
		// or the file is closed (deferred above, so run after it).
		ahead = prefetch(ctx, src)
		defer ahead.stop()
		jobs = ahead
		summarize = func() metrics.Summary { return col.SummaryWith(bothAtOnce) }
	}
	cfg := Config{Scheduler: gang.Config{Machine: gang.Machine{Processors: procs}, MPL: 1, Policy: policy, Backfill: BackfillFor(opt.Backfill, policy)}, Check: opt.Check}
	run := func() (Stats, error) { return runRef(ctx, cfg, jobs, emitRef) }
	if opt.Engine != nil {
		run = func() (Stats, error) { return opt.Engine(ctx, procs, jobs, emit) }
	}
	stats, err := run()
	if ahead != nil {
		ahead.stop()
	}
	if err != nil {
		return TraceResult{}, err
	}
	var ferr []error
	for _, f := range flushers {
		ferr = append(ferr, f())
	}
	if err := errors.Join(ferr...); err != nil {
		return TraceResult{}, err
	}
	res := TraceResult{
		Policy:         policy,
		Trace:          opt.Input.Name,
		Processors:     procs,
		ProcessorsFrom: from,
		Jobs:           src.Counts(),
		Metrics:        summarize(),
		Events:         stats.Events,
		Passes:         stats.Passes,
	}
	if opt.ByRuntimeBin {
		res.ByRuntime = col.ByRuntime()
	}
	for _, e := range rd.SkippedErrors() {
		res.Skipped = append(res.Skipped, e.Error())
	}
	return res, nil
}

// maxJobsHint bounds the room made for a trace's jobs on its header's word
// (24 bytes a job): a header that overstates costs at most 24 MB.
const maxJobsHint = 1 << 20

// expectedJobs is how many jobs a trace's header says it holds (MaxJobs,
// else MaxRecords), at most maxJobsHint; 0 if it does not say.
func expectedJobs(h *swf.Header) int {
	if h == nil {
		return 0
	}
	n := h.MaxJobs
	if n <= 0 {
		n = h.MaxRecords
	}
	return int(min(max(n, 0), maxJobsHint))
}

// BackfillFor returns the part of b that applies to policy: all of it for a
// weighted priority-backfill policy, all but the weights for sjf-bf, and
// nothing for any other policy. So one set of options can go with a list
// of policies.
func BackfillFor(b gang.Backfill, policy gang.Policy) gang.Backfill {
	if !gang.IsPriorityBackfill(policy) {
		return gang.Backfill{}
	}
	if _, weighted := gang.PresetWeights(policy); !weighted {
		b.Weights = nil
	}
	return b
}

// bothAtOnce runs a on this goroutine and b on another (the summary's two
// halves of sorting, on a second core), and returns when both have.
func bothAtOnce(a, b func()) {
	var wg sync.WaitGroup
	wg.Go(b)
	a()
	wg.Wait()
}
