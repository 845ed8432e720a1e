package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/node"
)

type benchRunFlags struct {
	workload     string
	jobs         int
	load         float64
	modes        string
	nodes        int
	slice        time.Duration
	mpl          int
	policy       string
	meanRuntime  time.Duration
	work         string
	seed         uint64
	bandwidth    string
	out          string
	priority     int
	stallTimeout time.Duration
	profile      string
}

func newBenchRunCmd() *cobra.Command {
	f := benchRunFlags{workload: "w3", jobs: 40, load: 0.8, modes: "bcs,gang,space", nodes: 4, slice: 50 * time.Millisecond,
		mpl: 3, policy: "easy", meanRuntime: 5 * time.Second, seed: 1, bandwidth: "100MB", priority: 50}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark workload on a local cluster under each mode and compare",
		Long: `Generate a workload of benchmark jobs (the simulator's generator: arrivals,
sizes and runtimes from the built-in model, templates from --workload), then,
for each of --modes in turn, start a local cluster of --nodes agents (one
processor each), replay the arrivals in real time, wait for every job, and
stop the cluster. Every job's submit, start and end, and its ranks' compute
and communication-wait reports, are written to DIR/MODE/jobs.csv; the
per-mode metrics to DIR/results.csv and DIR/results.json; a table is printed.

--mean-runtime sets the time scale (the mean dedicated runtime at load 1), so
a run takes minutes rather than the model's hours. The ranks burn CPU
(--work cpu) unless agents outnumber this machine's cores, where they wait
in wall time instead (--work wall; stopped time does not count). Ctrl-C stops
the run: the cluster is stopped and the jobs finished so far are kept.

Processor utilization is the computation the ranks report over the
processors' time from the first submission to the last end.`,
		Example: "  cosched bench run\n  cosched bench run --workload w3 --jobs 40 --load 0.8 --modes bcs,gang,space --nodes 4 --slice 50ms --mpl 3",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", f.workload, "named workload (template mix): w0 … w4")
	fl.IntVar(&f.jobs, "jobs", f.jobs, "jobs in the workload")
	fl.Float64Var(&f.load, "load", f.load, "offered load")
	fl.StringVar(&f.modes, "modes", f.modes, "comma-separated modes to run: space, gang, bcs")
	fl.IntVar(&f.nodes, "nodes", f.nodes, "agents (nodes of one processor)")
	fl.DurationVar(&f.slice, "slice", f.slice, "time slice (gang, bcs)")
	fl.IntVar(&f.mpl, "mpl", f.mpl, "multiprogramming level (gang, bcs)")
	fl.StringVar(&f.policy, "policy", f.policy, "queue policy: "+policyNames())
	fl.DurationVar(&f.meanRuntime, "mean-runtime", f.meanRuntime, "mean dedicated runtime at load 1 (the run's time scale)")
	fl.StringVar(&f.work, "work", "", "ranks' work: cpu or wall (default: wall when --nodes exceeds the cores, else cpu)")
	fl.Uint64Var(&f.seed, "seed", f.seed, "workload seed")
	fl.StringVar(&f.bandwidth, "bandwidth", f.bandwidth, "bcs: bandwidth per node per second (h_max = bandwidth × slice)")
	fl.StringVar(&f.out, "out", "", "output directory (default: cosched-bench-DATE-TIME)")
	fl.IntVar(&f.priority, "realtime-priority", f.priority, "agents' SCHED_FIFO priority for the strobe path (0: off)")
	fl.StringVar(&f.profile, "profile", "", "simulate with this machine profile (from cosched bench calibrate) instead of the default machine costs")
	fl.DurationVar(&f.stallTimeout, "stall-timeout", 0, "fail a mode when no job ends for this long while jobs are running (default: max(2m, 4 × MPL × the longest time limit))")
	return cmd
}

// benchRunConfig is a validated bench run.
type benchRunConfig struct {
	machine sweep.Machine
	simMach sweep.Machine // the simulated side's: machine with the profile applied
	profile *profile.Profile
	point   sweep.Point
	modes   []node.Mode
	work    string
}

func (f *benchRunFlags) validate() (benchRunConfig, error) {
	var errs []error
	var c benchRunConfig
	if _, err := bench.LookupWorkload(f.workload); err != nil {
		errs = append(errs, fmt.Errorf("--workload: %v", err))
	}
	if f.jobs < 1 {
		errs = append(errs, fmt.Errorf("--jobs %d: must be at least 1", f.jobs))
	}
	if !(f.load > 0) {
		errs = append(errs, fmt.Errorf("--load %g: must be positive", f.load))
	}
	if f.nodes < 1 {
		errs = append(errs, fmt.Errorf("--nodes %d: must be at least 1", f.nodes))
	}
	if f.slice < time.Millisecond {
		errs = append(errs, fmt.Errorf("--slice %v: must be at least 1ms", f.slice))
	}
	if f.mpl < 1 {
		errs = append(errs, fmt.Errorf("--mpl %d: must be at least 1", f.mpl))
	}
	if f.meanRuntime <= 0 {
		errs = append(errs, fmt.Errorf("--mean-runtime %v: must be positive", f.meanRuntime))
	}
	if f.stallTimeout < 0 {
		errs = append(errs, fmt.Errorf("--stall-timeout %v: must not be negative", f.stallTimeout))
	}
	seen := map[node.Mode]bool{}
	for _, s := range strings.Split(f.modes, ",") {
		m, err := node.ParseMode(strings.TrimSpace(s))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--modes: %v", err))
		case m == node.Local:
			errs = append(errs, fmt.Errorf("--modes: local is not a scheduling mode to compare (use space, gang, bcs)"))
		case seen[m]:
			errs = append(errs, fmt.Errorf("--modes: %s twice", m))
		default:
			seen[m] = true
			c.modes = append(c.modes, m)
		}
	}
	c.work = f.work
	switch {
	case f.work == "" && f.nodes > runtime.NumCPU():
		c.work = "wall"
	case f.work == "":
		c.work = "cpu"
	case f.work != "cpu" && f.work != "wall":
		errs = append(errs, fmt.Errorf("--work %q: want cpu or wall", f.work))
	}
	if bw, err := parseSize(f.bandwidth); f.bandwidth != "0" && (err != nil || bw < 1) {
		errs = append(errs, fmt.Errorf("--bandwidth %q: want a size per second (e.g. 100MB) or 0", f.bandwidth))
	}
	if _, err := gang.ParsePolicy(f.policy); err != nil {
		errs = append(errs, fmt.Errorf("--policy: %v", err))
	}
	if len(errs) > 0 {
		return c, flagErrors(errs)
	}
	c.machine = sweep.DefaultMachine()
	c.machine.Processors = f.nodes
	c.machine.MemoryPerProc = 0
	c.machine.MeanRuntime = f.meanRuntime
	c.simMach = c.machine
	if f.profile != "" {
		p, err := profile.Load(f.profile)
		if err != nil {
			return c, fmt.Errorf("--profile: %w", err)
		}
		c.profile, c.simMach = p, p.Apply(c.machine)
	}
	c.point = sweep.Point{MPL: f.mpl, Slice: f.slice, Load: f.load, Workload: f.workload, Jobs: f.jobs, Seed: f.seed, Policy: gang.Policy(f.policy)}
	return c, nil
}

// BenchModeResult is one mode's measured run.
type BenchModeResult struct {
	Mode    node.Mode          `json:"mode"`
	Summary experiment.Summary `json:"summary"`
	Nodes   benchNodeTotals    `json:"nodes"`
	Elapsed time.Duration      `json:"elapsed_ns"`
	Error   string             `json:"error,omitempty"`
	// Simulated is the simulator's prediction for the same jobs (default
	// machine costs: 1 ms job switch, 100 µs process switch, 100 MB/s).
	Simulated *sweep.Row          `json:"simulated,omitempty"`
	Jobs      []experiment.Record `json:"jobs"`
}

// responseError is the simulated mean response's error relative to the
// measured one (NaN without both).
func (m BenchModeResult) responseError() float64 {
	meas := m.Summary.Metrics.Response.Mean
	if m.Simulated == nil || m.Summary.Completed == 0 || meas == 0 {
		return math.NaN()
	}
	return (m.Simulated.MeanResponse - meas) / meas
}

// benchNodeTotals sums the agents' counters at the end of a mode's run.
type benchNodeTotals struct {
	SlotReuses     uint64 `json:"slot_reuses"`
	Transferred    uint64 `json:"relay_transferred"`
	Deferred       uint64 `json:"relay_deferred"`
	Delivered      uint64 `json:"relay_delivered"`
	StrobesLost    uint64 `json:"strobes_lost"`
	HeartbeatWaits uint64 `json:"heartbeat_waits"`
}

// BenchRunReport is what `cosched bench run` writes to results.json.
type BenchRunReport struct {
	Workload     string            `json:"workload"`
	Jobs         int               `json:"jobs"`
	Load         float64           `json:"load"`
	Nodes        int               `json:"nodes"`
	Slice        time.Duration     `json:"slice_ns"`
	MPL          int               `json:"mpl"`
	Policy       string            `json:"policy"`
	MeanRuntime  time.Duration     `json:"mean_runtime_ns"`
	Work         string            `json:"work"`
	Seed         uint64            `json:"seed"`
	WorkloadJobs []experiment.Job  `json:"workload_jobs"`
	Modes        []BenchModeResult `json:"modes"`

	// Profile is the machine profile the simulated side used (--profile).
	Profile *benchProfileRef `json:"profile,omitempty"`
}

func benchRun(ctx context.Context, out, progress io.Writer, f *benchRunFlags) error {
	c, err := f.validate()
	if err != nil {
		return err
	}
	jobs, err := experiment.Workload(c.machine, c.point)
	if err != nil {
		return err
	}
	dir := f.out
	if dir == "" {
		dir = "cosched-bench-" + time.Now().Format("20060102-150405")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(progress, "%d %s jobs on %d nodes, load %g, last arrival at %v; modes %s; ranks' work: %s; results in %s\n",
		len(jobs), f.workload, f.nodes, f.load, jobs[len(jobs)-1].Submit.Round(time.Second), f.modes, c.work, dir)
	rep := BenchRunReport{Workload: f.workload, Jobs: f.jobs, Load: f.load, Nodes: f.nodes, Slice: f.slice, MPL: f.mpl,
		Policy: f.policy, MeanRuntime: f.meanRuntime, Work: c.work, Seed: f.seed, WorkloadJobs: jobs}
	if c.profile != nil {
		rep.Profile = &benchProfileRef{Path: f.profile, Profile: c.profile}
	}
	var runErr error
	for i, mode := range c.modes {
		res, err := benchRunMode(ctx, progress, f, c, mode, jobs, dir, fmt.Sprintf("[%s %d/%d]", mode, i+1, len(c.modes)))
		if row, serr := experiment.Simulate(ctx, c.simMach, c.point, mode); serr == nil {
			res.Simulated = &row
		} else if err == nil {
			err = fmt.Errorf("simulating: %w", serr)
		}
		rep.Modes = append(rep.Modes, res)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", mode, err)
			break
		}
	}
	// A job that did not complete makes the run's figures meaningless:
	// say which and why, and fail.
	for _, m := range rep.Modes {
		for _, r := range m.Jobs {
			if !r.Completed() && runErr == nil {
				runErr = fmt.Errorf("%s: %d of %d jobs did not complete; job %d (workload job %d) is %s: %s (rank output under %s)",
					m.Mode, m.Summary.Jobs-m.Summary.Completed, m.Summary.Jobs, r.ID, r.Seq, r.State, r.Reason,
					filepath.Join(dir, string(m.Mode), "state", "agents"))
			}
		}
	}
	if err := writeBenchRun(dir, &rep); err != nil {
		return err
	}
	writeBenchRunTable(out, &rep)
	fmt.Fprintf(out, "\nper-job records: %s/MODE/jobs.csv; metrics: %s/results.csv, %s/results.json\n", dir, dir, dir)
	return runErr
}

// benchRunMode runs the workload on a fresh local cluster in one mode.
func benchRunMode(ctx context.Context, progress io.Writer, f *benchRunFlags, c benchRunConfig, mode node.Mode,
	jobs []experiment.Job, dir, tag string) (res BenchModeResult, err error) {
	res.Mode = mode
	start := time.Now()
	defer func() {
		res.Elapsed = time.Since(start)
		if err != nil {
			res.Error = err.Error()
		}
	}()
	state := filepath.Join(dir, string(mode), "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "%s starting %d agents...\n", tag, f.nodes)
	up := clusterUpFlags{n: f.nodes, mode: string(mode), slice: f.slice.String(), mpl: f.mpl, policy: f.policy,
		processors: 1, stateDir: state, priority: f.priority, bandwidth: f.bandwidth,
		timeout: 30*time.Second + time.Duration(f.nodes)*2*time.Second}
	if err := clusterUp(ctx, io.Discard, &up); err != nil {
		return res, err
	}
	rec, err := readCluster(state)
	if err != nil {
		return res, err
	}
	defer func() {
		if left := stopAgents(rec.Agents, 10*time.Second); len(left) > 0 {
			fmt.Fprintf(progress, "%s warning: agents still running after the run: %v\n", tag, left)
		}
	}()
	lastDone, lastPrint := -1, time.Time{}
	recs, err := experiment.Replay(ctx, node.NewClient(rec.API), jobs, experiment.Options{Work: c.work,
		StallAfter: stallTimeout(f, jobs),
		Progress: func(p experiment.Progress) {
			if p.Done != lastDone || time.Since(lastPrint) > 10*time.Second {
				fmt.Fprintf(progress, "%s %d/%d jobs done, %d submitted, %v\n", tag, p.Done, p.Total, p.Submitted, p.Elapsed.Round(time.Second))
				lastDone, lastPrint = p.Done, time.Now()
			}
		}})
	if errors.Is(err, experiment.ErrStalled) {
		// What every agent knew when the run hung: the evidence a bug
		// report needs, taken before the cluster is stopped.
		path := filepath.Join(dir, string(mode), "nodes-at-stall.json")
		if derr := dumpNodeStats(rec.API, path); derr == nil {
			err = fmt.Errorf("%w (the agents' state: %s)", err, path)
		}
	}
	res.Jobs = recs
	res.Summary = experiment.Summarize(recs, f.nodes, metrics.DefaultTau)
	res.Nodes = benchNodeCounters(rec)
	if werr := writeJobsCSV(filepath.Join(dir, string(mode), "jobs.csv"), recs); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// stallTimeout is --stall-timeout, or by default long enough for the
// longest job to run time-shared at the MPL with room to spare.
func stallTimeout(f *benchRunFlags, jobs []experiment.Job) time.Duration {
	if f.stallTimeout > 0 {
		return f.stallTimeout
	}
	var longest time.Duration
	for _, j := range jobs {
		longest = max(longest, j.Estimate)
	}
	return max(2*time.Minute, 4*time.Duration(f.mpl)*longest)
}

// dumpNodeStats writes the cluster's GET /v1/nodes?stats=1 to path.
func dumpNodeStats(api, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := node.NewClient(api).Nodes(ctx, true)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(nodes, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// benchNodeCounters sums every agent's counters (best effort: an agent
// that does not answer is left out).
func benchNodeCounters(rec *clusterRecord) benchNodeTotals {
	var t benchNodeTotals
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, a := range rec.Agents {
		st, err := node.NewClient(a.API).LocalStats(ctx, ^uint64(0))
		if err != nil {
			continue
		}
		t.SlotReuses += st.SlotReuses
		t.Transferred += st.Relay.Transferred
		t.Deferred += st.Relay.Deferred
		t.Delivered += st.Relay.Delivered
		t.HeartbeatWaits += st.Relay.HeartbeatWaits
		t.StrobesLost += st.Strobe.Lost
	}
	return t
}

func writeJobsCSV(path string, recs []experiment.Record) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"seq", "id", "state", "processors", "template", "iterations", "runtime_s", "estimate_s",
		"submit_s", "start_s", "end_s", "wait_s", "response_s", "compute_s", "comm_wait_s", "reason"})
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	opt := func(d time.Duration) string {
		if d < 0 {
			return ""
		}
		return sec(d)
	}
	for _, r := range recs {
		wait, resp := time.Duration(-1), time.Duration(-1)
		if r.Start >= 0 {
			wait = r.Start - r.Submit
		}
		if r.End >= 0 {
			resp = r.End - r.Submit
		}
		w.Write([]string{strconv.Itoa(r.Seq), strconv.FormatInt(r.ID, 10), string(r.State), strconv.Itoa(r.Processors), r.Template,
			strconv.Itoa(r.Iterations), sec(r.Runtime), sec(r.Estimate), sec(r.Submit), opt(r.Start), opt(r.End), opt(wait), opt(resp),
			sec(r.Compute), sec(r.CommWait), r.Reason})
	}
	w.Flush()
	return atomicfile.WriteFile(path, []byte(b.String()))
}

func writeBenchRun(dir string, rep *BenchRunReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n')); err != nil {
		return err
	}
	var sb strings.Builder
	w := csv.NewWriter(&sb)
	w.Write([]string{"mode", "jobs", "completed", "mean_response_s", "mean_wait_s", "mean_slowdown", "mean_bounded_slowdown",
		"makespan_s", "processor_util", "slot_reuses", "sim_mean_response_s", "sim_mean_wait_s", "sim_makespan_s", "sim_processor_util",
		"response_rel_error", "error"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	for _, m := range rep.Modes {
		s := m.Summary
		w.Write([]string{string(m.Mode), strconv.Itoa(s.Jobs), strconv.Itoa(s.Completed), f(s.Metrics.Response.Mean), f(s.Metrics.Wait.Mean),
			f(s.Metrics.Slowdown.Mean), f(s.Metrics.BoundedSlowdown.Mean), f(s.Metrics.Makespan), f(s.ProcessorUtil),
			strconv.FormatUint(m.Nodes.SlotReuses, 10), simField(m, func(r *sweep.Row) float64 { return r.MeanResponse }),
			simField(m, func(r *sweep.Row) float64 { return r.MeanWait }), simField(m, func(r *sweep.Row) float64 { return r.Makespan }),
			simField(m, func(r *sweep.Row) float64 { return r.ProcessorUtil }), f(m.responseError()), m.Error})
	}
	w.Flush()
	return atomicfile.WriteFile(filepath.Join(dir, "results.csv"), []byte(sb.String()))
}

// simField is a simulated value for the CSV ("" when not simulated).
func simField(m BenchModeResult, get func(*sweep.Row) float64) string {
	if m.Simulated == nil {
		return ""
	}
	return strconv.FormatFloat(get(m.Simulated), 'f', 4, 64)
}

func writeBenchRunTable(out io.Writer, rep *BenchRunReport) {
	fmt.Fprintf(out, "\n%s, %d jobs, load %g, %d nodes, slice %v, MPL %d, %s work: measured (meas) and simulated (sim)\n\n",
		rep.Workload, rep.Jobs, rep.Load, rep.Nodes, rep.Slice, rep.MPL, rep.Work)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tdone\tresponse meas\tsim\terror\twait meas\tsim\tmakespan meas\tsim\tproc util meas\tsim\tslot reuses\t")
	for _, m := range rep.Modes {
		s := m.Summary
		sim := [4]string{"-", "-", "-", "-"}
		if r := m.Simulated; r != nil {
			sim = [4]string{fmt.Sprintf("%.2fs", r.MeanResponse), fmt.Sprintf("%.2fs", r.MeanWait), fmt.Sprintf("%.1fs", r.Makespan), fmt.Sprintf("%.1f%%", 100*r.ProcessorUtil)}
		}
		errText := "-"
		if e := m.responseError(); !math.IsNaN(e) {
			errText = fmt.Sprintf("%+.0f%%", 100*e)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.2fs\t%s\t%s\t%.2fs\t%s\t%.1fs\t%s\t%.1f%%\t%s\t%d\t\n", m.Mode, s.Completed, s.Jobs,
			s.Metrics.Response.Mean, sim[0], errText, s.Metrics.Wait.Mean, sim[1], s.Metrics.Makespan, sim[2], 100*s.ProcessorUtil, sim[3], m.Nodes.SlotReuses)
	}
	tw.Flush()
	for _, m := range rep.Modes {
		if m.Error != "" {
			fmt.Fprintf(out, "%s: %s\n", m.Mode, m.Error)
		}
	}
}
