package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/gang"
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
	addr         string
	profile      string
	wide         bool
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
per-mode metrics to DIR/results.csv and DIR/results.json; a table is printed
(each cell measured/simulated; --wide for a column per value), then a
verdict: on mean response, mean slowdown and makespan, which mode did best
and by how much, measured and simulated, and whether the simulator ranked
the modes as measured. DIR/report.md opens with the same verdict.

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
			return benchRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, cmd.Flags().Changed)
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
	fl.StringVar(&f.addr, "addr", "", "run on the existing cluster whose controller API is at HOST:PORT (its mode, processors, slice and MPL) instead of starting local ones")
	fl.StringVar(&f.profile, "profile", "", "simulate with this machine profile (from cosched bench calibrate) instead of the default machine costs")
	fl.BoolVar(&f.wide, "wide", false, "print a column per measured and simulated value, with slowdown, makespan and slot reuses (the default table pairs them)")
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

func benchRun(ctx context.Context, out, progress io.Writer, f *benchRunFlags, changed func(string) bool) error {
	var cl *node.Client
	if f.addr != "" {
		// An existing cluster fixes the mode, processors, slice and MPL:
		// take them from it, and refuse flags that say otherwise.
		cl = node.NewClient(f.addr)
		if err := f.adoptCluster(ctx, cl, changed); err != nil {
			return err
		}
	}
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
	where := fmt.Sprintf("a local cluster of %d agents per mode", f.nodes)
	if cl != nil {
		where = "the cluster at " + f.addr
	}
	fmt.Fprintf(progress, "%d %s jobs on %d processors (%s), load %g, last arrival at %v; modes %s; ranks' work: %s; results in %s\n",
		len(jobs), f.workload, f.nodes, where, f.load, jobs[len(jobs)-1].Submit.Round(time.Second), f.modes, c.work, dir)
	run := experiment.Run{Workload: f.workload, Jobs: f.jobs, Load: f.load, Nodes: f.nodes, Slice: f.slice, MPL: f.mpl,
		Policy: f.policy, MeanRuntime: f.meanRuntime, Work: c.work, Seed: f.seed, Cluster: "local", Machine: experiment.CostsOf(c.simMach),
		Started: time.Now(), WorkloadJobs: jobs}
	if c.profile != nil {
		run.Profile = &experiment.ProfileRef{Path: f.profile, Profile: c.profile}
	}
	if cl != nil {
		run.Cluster = f.addr
	}
	var runErr error
	for i, mode := range c.modes {
		res, err := benchRunMode(ctx, progress, f, c, cl, mode, jobs, dir, fmt.Sprintf("[%s %d/%d]", mode, i+1, len(c.modes)))
		if row, serr := experiment.Simulate(ctx, c.simMach, c.point, mode); serr == nil {
			res.Simulated = &row
		} else if err == nil {
			err = fmt.Errorf("simulating: %w", serr)
		}
		if sj, serr := experiment.SimulateJobs(ctx, c.simMach, c.point, mode); serr == nil {
			res.SimJobs = sj
		} else if err == nil {
			err = fmt.Errorf("simulating: %w", serr)
		}
		run.Modes = append(run.Modes, res)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", mode, err)
			break
		}
	}
	// A job that did not complete makes the run's figures meaningless:
	// say which and why, and fail.
	for _, m := range run.Modes {
		for _, r := range m.Jobs {
			if !r.Completed() && runErr == nil {
				runErr = fmt.Errorf("%s: %d of %d jobs did not complete; job %d (workload job %d) is %s: %s (rank output under %s)",
					m.Mode, m.Summary.Jobs-m.Summary.Completed, m.Summary.Jobs, r.ID, r.Seq, r.State, r.Reason,
					filepath.Join(dir, string(m.Mode), "state", "agents"))
			}
		}
	}
	if err := experiment.WriteResults(dir, &run); err != nil {
		return err
	}
	report, err := experiment.WriteReport(dir, &run)
	if err != nil {
		return err
	}
	experiment.WriteTable(out, &run, f.wide)
	fmt.Fprintf(out, "\nreport: %s; per-job records: %s/MODE/jobs.csv; metrics: %s/results.csv, %s/results.json\n", report, dir, dir, dir)
	return runErr
}

// adoptCluster takes the mode, processors, slice and MPL of the cluster
// behind cl into f. A flag the user set to something else is an error
// naming it: the run would not be what was asked for.
func (f *benchRunFlags) adoptCluster(ctx context.Context, cl *node.Client, changed func(string) bool) error {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rep, err := cl.Nodes(qctx, true)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", f.addr, err)
	}
	if rep.Cluster == nil {
		return fmt.Errorf("--addr %s: the controller did not report its configuration", f.addr)
	}
	cs := rep.Cluster
	procs := 0
	for _, n := range rep.Nodes {
		if n.State == "up" {
			procs += len(n.Columns)
		}
	}
	var errs []error
	conflict := func(flag string, mine, theirs any) {
		if changed(flag) && fmt.Sprint(mine) != fmt.Sprint(theirs) {
			errs = append(errs, fmt.Errorf("--%s %v: the cluster at --addr runs %v", flag, mine, theirs))
		}
	}
	conflict("modes", f.modes, cs.Mode)
	conflict("nodes", f.nodes, procs)
	if cs.Mode == node.Gang || cs.Mode == node.BCS {
		conflict("slice", f.slice, cs.Slice.D)
		conflict("mpl", f.mpl, cs.MPL)
	}
	if cs.Policy != "" {
		conflict("policy", f.policy, cs.Policy)
		f.policy = string(cs.Policy)
	}
	for _, flag := range []string{"bandwidth", "realtime-priority"} {
		if changed(flag) {
			errs = append(errs, fmt.Errorf("--%s: set on the cluster's agents, not by bench run, when --addr is given", flag))
		}
	}
	if len(errs) > 0 {
		return flagErrors(errs)
	}
	if procs == 0 {
		return fmt.Errorf("--addr %s: no processor of the cluster is up", f.addr)
	}
	f.modes, f.nodes = string(cs.Mode), procs
	if cs.Mode == node.Gang || cs.Mode == node.BCS {
		f.slice, f.mpl = cs.Slice.D, cs.MPL
	} else {
		f.mpl = 1
	}
	if f.work == "" {
		f.work = "cpu" // agents on their own hosts: burn CPU
	}
	return nil
}

// benchRunMode runs the workload in one mode: on a fresh local cluster, or
// on the cluster behind cl.
func benchRunMode(ctx context.Context, progress io.Writer, f *benchRunFlags, c benchRunConfig, cl *node.Client, mode node.Mode,
	jobs []experiment.Job, dir, tag string) (res experiment.ModeResult, err error) {
	res.Mode = mode
	start := time.Now()
	defer func() {
		res.Elapsed = time.Since(start)
		if err != nil {
			res.Error = err.Error()
		}
	}()
	if err := os.MkdirAll(filepath.Join(dir, string(mode)), 0o755); err != nil {
		return res, err
	}
	if cl == nil {
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
		cl = node.NewClient(rec.API)
	}
	lastDone, lastPrint := -1, time.Time{}
	recs, err := experiment.Replay(ctx, cl, jobs, experiment.Options{Work: c.work,
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
		if derr := dumpNodeStats(cl, path); derr == nil {
			err = fmt.Errorf("%w (the agents' state: %s)", err, path)
		}
	}
	res.Jobs = recs
	res.Summary = experiment.Summarize(recs, f.nodes, metrics.DefaultTau)
	tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	res.Nodes, _ = experiment.CollectNodeTotals(tctx, cl) // best effort: the counters are for the record
	cancel()
	if werr := experiment.WriteRecordsCSV(filepath.Join(dir, string(mode), "jobs.csv"), recs); werr != nil && err == nil {
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
func dumpNodeStats(cl *node.Client, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := cl.Nodes(ctx, true)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(nodes, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
