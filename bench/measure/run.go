package measure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/sharing"
)

// RunOptions say how Run and RunModes run a workload of benchmark jobs.
type RunOptions struct {
	Modes []sharing.Mode
	// Arms, if set, are the configurations compared instead of Modes at
	// Slice and MPL: a mode at a slice or MPL of its own (--mode
	// bcs:2ms,gang:10ms:3,space); Modes holds their modes.
	Arms             []Arm
	Nodes            int // processors (local clusters: agents of one processor)
	Slice            time.Duration
	MPL              int
	Policy           gang.Policy
	Bandwidth        float64 // bcs: bytes per second per node (0: unlimited)
	RealtimePriority int
	Work             string // the ranks' work (WorkCPU or WorkWall; "": DefaultWork of Nodes)
	// StallTimeout fails a mode when no job ends for this long while jobs
	// run; 0: max(2m, 4 × MPL × the longest estimate).
	StallTimeout time.Duration
	// Cluster is an existing cluster to run on (OnCluster), ClusterAddr
	// its address as given, for the record; nil starts a local one per
	// mode (its state under Dir/MODE/state).
	Cluster     *api.Client
	ClusterAddr string
	// Dir is where the run's files go (each mode's records in
	// Dir/MODE/jobs.csv); Run's default: cosched-bench-DATE-TIME.
	Dir string
	// Point is the workload: its Workload, Jobs, Load and Seed (its MPL,
	// Slice and Policy are the run's).
	Point sweep.Point
	// Machine is the workload's machine: its MeanRuntime (the run's time
	// scale), network and memory (its Processors are Nodes), and the
	// simulated side's costs unless Profile is set.
	Machine sweep.Machine
	// Profile is the machine profile (bench calibrate's) whose costs the
	// simulated side applies to Machine; nil: Machine's own.
	Profile *experiment.ProfileRef
	// Programs, if set, are the workload instead of Point's benchmark
	// jobs: MPI programs (an --mpi-programs file) run with --mpi cosched,
	// each calibrated alone first for the simulator's model of it.
	Programs *MPIPrograms
	// MPILib is the directory of cosched's MPI library the agents give
	// the programs ("": DefaultMPILib of Exe).
	MPILib   string
	Exe      string    // the cosched binary (default: this process's)
	Progress io.Writer // progress lines (nil: none)
}

// DefaultRunOptions are bench run's defaults: the three modes compared on
// 4 local agents, 40 jobs of workload w3 at load 0.8.
func DefaultRunOptions() RunOptions {
	m := sweep.DefaultMachine()
	m.MemoryPerProc, m.MeanRuntime = 0, 5*time.Second
	return RunOptions{Modes: []sharing.Mode{sharing.BCS, sharing.Gang, sharing.Space}, Nodes: 4, Slice: 50 * time.Millisecond, MPL: 3,
		Policy: gang.EASY, Bandwidth: 100e6, RealtimePriority: 50, Machine: m, Point: sweep.Point{Workload: "w3", Jobs: 40, Load: 0.8, Seed: 1}}
}

// ParseModes reads a comma-separated list of modes, in any case
// (sharing.Parse). It never fails: a name it does not know is kept as
// written, for Validate to refuse with every other problem.
func ParseModes(s string) ([]sharing.Mode, error) {
	var modes []sharing.Mode
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		m, err := sharing.Parse(item)
		if err != nil {
			m = sharing.Mode(item)
		}
		modes = append(modes, m)
	}
	return modes, nil
}

// Validate checks every field (errors keyed by field, fielderr; the
// simulated side's as "Point.Jobs", "Machine.MeanRuntime", …).
func (o RunOptions) Validate() error {
	var errs []error
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	seen := map[Arm]bool{}
	for _, a := range o.arms() {
		m := a.Mode
		switch {
		case !slices.Contains(sharing.Modes(), m):
			bad("Modes", nil, "unknown mode %q (valid: space, gang, bcs)", m)
		case m == sharing.Local:
			bad("Modes", nil, "local is not a scheduling mode to compare (use space, gang, bcs)")
		case seen[a]:
			bad("Modes", nil, "%s twice", armText(a))
		case a.Slice != 0 && (a.Slice < localcluster.MinSlice || a.Slice > localcluster.MaxSlice):
			bad("Modes", nil, "%s: the slice must be from %v to %v", armText(a), localcluster.MinSlice, localcluster.MaxSlice)
		case a.MPL > localcluster.MaxMPL:
			bad("Modes", nil, "%s: the MPL must be from 1 to %d", armText(a), localcluster.MaxMPL)
		}
		seen[a] = true
	}
	if len(o.arms()) == 0 {
		bad("Modes", nil, "no mode")
	}
	if o.Programs != nil {
		for _, p := range o.Programs.Programs {
			if p.Ranks > o.Nodes {
				bad("Programs", nil, "%s:%d: ranks: %s has %d ranks, more than the %d processors (--nodes)", o.Programs.File, p.Line, p.Name, p.Ranks, o.Nodes)
			}
		}
		if o.Cluster != nil {
			bad("Programs", nil, "MPI programs run on local clusters only, not on the cluster at {Addr}")
		}
	}
	if o.Nodes < 1 || o.Nodes > 1<<20 {
		bad("Nodes", o.Nodes, "must be from 1 to %d", 1<<20)
	}
	if o.Slice < localcluster.MinSlice || o.Slice > localcluster.MaxSlice {
		bad("Slice", o.Slice, "must be from %v to %v", localcluster.MinSlice, localcluster.MaxSlice)
	}
	if o.MPL < 1 || o.MPL > localcluster.MaxMPL {
		bad("MPL", o.MPL, "must be from 1 to %d", localcluster.MaxMPL)
	}
	if info, err := jss.LookupPolicy(string(o.Policy)); err != nil || info.Engine != jss.EngineMatrix {
		bad("Policy", nil, "unknown policy %q (valid: %s)", o.Policy, strings.Join(policyNames(), ", "))
	}
	if !(o.Bandwidth >= 0) || o.Bandwidth > math.MaxInt64 {
		bad("Bandwidth", o.Bandwidth, "want bytes per second, or 0 for unlimited")
	}
	if o.Work != "" && o.Work != WorkCPU && o.Work != WorkWall {
		bad("Work", fmt.Sprintf("%q", o.Work), "want cpu or wall")
	}
	if o.StallTimeout < 0 {
		bad("StallTimeout", o.StallTimeout, "must not be negative")
	}
	if o.RealtimePriority < 0 || o.RealtimePriority > 99 {
		bad("RealtimePriority", o.RealtimePriority, "must be 0 (off) to 99")
	}
	if _, err := bench.LookupWorkload(o.Point.Workload); err != nil {
		bad("Point.Workload", nil, "%v", err)
	}
	if o.Point.Jobs < 1 || o.Point.Jobs > 1_000_000 {
		bad("Point.Jobs", o.Point.Jobs, "must be from 1 to 1000000")
	}
	if !(o.Point.Load > 0) || math.IsInf(o.Point.Load, 0) {
		bad("Point.Load", o.Point.Load, "must be positive")
	}
	if o.Machine.MeanRuntime <= 0 {
		bad("Machine.MeanRuntime", o.Machine.MeanRuntime, "must be positive")
	}
	return errors.Join(errs...)
}

// policyNames are the matrix core's policies, the ones a cluster runs.
func policyNames() []string {
	var out []string
	for _, p := range gang.Policies() {
		out = append(out, string(p))
	}
	return out
}

// Run runs o's workload (experiment.Workload of o.Point on o.Machine)
// under each of o.Modes in turn (RunModes), then writes the run's files
// into o.Dir and its table to out (experiment.WriteAll), also after a
// failed mode, whose error it returns then. o is checked first
// (Validate).
func Run(ctx context.Context, out io.Writer, o RunOptions, wide bool) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.resolved()
	if o.Programs != nil {
		if err := checkMPILib(o.MPILib); err != nil {
			return fmt.Errorf("--mpi-programs: %w", err)
		}
	}
	o.Dir = cmp.Or(o.Dir, "cosched-bench-"+time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("measure: the results directory: %w", err)
	}
	var jobs []experiment.Job
	var models []experiment.MPIProgramModel
	var err error
	if o.Programs != nil {
		jobs, models, err = o.mpiWorkload(ctx)
	} else {
		jobs, err = experiment.Workload(o.Machine, o.Point)
	}
	if err != nil {
		return err
	}
	where := fmt.Sprintf("a local cluster of %d agents per mode", o.Nodes)
	if o.Cluster != nil {
		where = "the cluster at " + o.ClusterAddr
	}
	if o.Programs != nil {
		fmt.Fprintf(o.Progress, "%d jobs of %d MPI programs (%s) on %d processors (%s), all submitted at once; modes %s; results in %s\n",
			len(jobs), len(models), o.Programs.File, o.Nodes, where, armsText(o.arms()), o.Dir)
	} else {
		fmt.Fprintf(o.Progress, "%d %s jobs on %d processors (%s), load %g, last arrival at %v; modes %s; ranks' work: %s; results in %s\n",
			len(jobs), o.Point.Workload, o.Nodes, where, o.Point.Load, jobs[len(jobs)-1].Submit.Round(time.Second), armsText(o.arms()), o.Work, o.Dir)
	}
	run := o.record(jobs)
	if o.Programs != nil {
		run.MPIPrograms = o.Programs.File
		run.Workload, run.Load, run.Jobs = "MPI programs", 0, len(jobs)
		run.MPIModels = models
	}
	runErr := RunModes(ctx, o, jobs, &run)
	if err := experiment.WriteAll(out, o.Dir, &run, wide); err != nil {
		return err
	}
	return runErr
}

// resolved is o with its defaults and the settings it derives filled in:
// Work, Progress, and the workload's processors, MPL, slice and policy.
func (o RunOptions) resolved() RunOptions {
	o.Work = cmp.Or(o.Work, DefaultWork(o.Nodes))
	o.Progress = cmp.Or[io.Writer](o.Progress, io.Discard)
	o.Machine.Processors = o.Nodes
	o.Point.MPL, o.Point.Slice, o.Point.Policy = o.MPL, o.Slice, o.Policy
	if o.Programs != nil && o.MPILib == "" {
		o.MPILib = DefaultMPILib(o.Exe)
	}
	return o
}

// simulated is the simulated side's machine: Machine with Profile's costs.
func (o RunOptions) simulated() sweep.Machine {
	if o.Profile == nil {
		return o.Machine
	}
	return o.Profile.Apply(o.Machine)
}

// RunModes runs jobs under each of o.Modes in turn, each beside the
// simulator's prediction for the same point, into run.Modes. It stops at
// the first mode that fails; a job that did not complete is an error
// naming it.
func RunModes(ctx context.Context, o RunOptions, jobs []experiment.Job, run *experiment.Run) error {
	o = o.resolved()
	var runErr error
	arms := o.arms()
	for i, arm := range arms {
		oa := o // the arm's slice and MPL
		oa.Slice, oa.MPL = cmp.Or(arm.Slice, o.Slice), cmp.Or(arm.MPL, o.MPL)
		oa.Point.Slice, oa.Point.MPL = oa.Slice, oa.MPL
		mode := arm.Mode
		res, err := runMode(ctx, oa, arm, jobs, fmt.Sprintf("[%s %d/%d]", armText(arm), i+1, len(arms)))
		if arm.Own() {
			res.Label, res.Slice, res.MPL = arm.Label(), oa.Slice, oa.MPL
		}
		var serr error
		if o.Programs != nil {
			var row sweep.Row
			row, res.SimJobs, serr = experiment.SimulateList(ctx, oa.simulated(), oa.Point, mode, jobs)
			if serr == nil {
				res.Simulated = &row
			}
		} else {
			var row sweep.Row
			if row, serr = experiment.Simulate(ctx, oa.simulated(), oa.Point, mode); serr == nil {
				res.Simulated = &row
				res.SimJobs, serr = experiment.SimulateJobs(ctx, oa.simulated(), oa.Point, mode)
			}
		}
		if serr != nil && err == nil {
			err = fmt.Errorf("simulating: %w", serr)
		}
		run.Modes = append(run.Modes, res)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", armText(arm), err)
			break
		}
	}
	// A job that did not complete makes the run's figures meaningless:
	// say which and why, and fail.
	for _, m := range run.Modes {
		for _, r := range m.Jobs {
			if !r.Completed() && runErr == nil {
				runErr = fmt.Errorf("%s: %d of %d jobs did not complete; job %d (workload job %d) is %s: %s (rank output under %s)",
					m.Name(), m.Summary.Jobs-m.Summary.Completed, m.Summary.Jobs, r.ID, r.Seq, r.State, r.Reason,
					filepath.Join(o.Dir, m.Name(), "state", "agents"))
			}
		}
	}
	return runErr
}

// runMode runs the workload in one mode: on a fresh local cluster, or on
// o.Cluster.
func runMode(ctx context.Context, o RunOptions, arm Arm, jobs []experiment.Job, tag string) (res experiment.ModeResult, err error) {
	progress, dir, cl := o.Progress, o.Dir, o.Cluster
	mode, name := arm.Mode, armText(arm)
	res.Mode = mode
	start := time.Now()
	res.HostLoad[0] = hostLoad()
	defer func() {
		res.HostLoad[1] = hostLoad()
		res.Elapsed = time.Since(start)
		if err != nil {
			res.Error = err.Error()
		}
	}()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		return res, err
	}
	if cl == nil {
		state := filepath.Join(dir, name, "state")
		if err := os.MkdirAll(state, 0o755); err != nil {
			return res, err
		}
		fmt.Fprintf(progress, "%s starting %d agents (host load %.1f)...\n", tag, o.Nodes, res.HostLoad[0])
		rec, err := localcluster.Up(ctx, o.clusterOptions(mode, state))
		if err != nil {
			return res, err
		}
		defer func() {
			if err := rec.Stop(localcluster.TempStopGrace); err != nil {
				fmt.Fprintf(progress, "%s warning: %v\n", tag, err)
			}
		}()
		cl = rec.Client()
	}
	lastDone, lastPrint := -1, time.Time{}
	recs, err := experiment.Replay(ctx, cl, jobs, experiment.Options{Work: o.Work,
		StallAfter: stallTimeout(o, jobs),
		Progress: func(p experiment.Progress) {
			if p.Done != lastDone || time.Since(lastPrint) > 10*time.Second {
				fmt.Fprintf(progress, "%s %d/%d jobs done, %d submitted, %v\n", tag, p.Done, p.Total, p.Submitted, p.Elapsed.Round(time.Second))
				lastDone, lastPrint = p.Done, time.Now()
			}
		}})
	if errors.Is(err, experiment.ErrStalled) {
		// What every agent knew when the run hung: the evidence a bug
		// report needs, taken before the cluster is stopped.
		path := filepath.Join(dir, name, "nodes-at-stall.json")
		if derr := dumpNodeStats(cl, path); derr == nil {
			err = fmt.Errorf("%w (the agents' state: %s)", err, path)
		}
	}
	res.Jobs = recs
	res.Summary = experiment.Summarize(recs, o.Nodes, metrics.DefaultTau)
	tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	res.Nodes, _ = experiment.CollectNodeTotals(tctx, cl) // best effort: the counters are for the record
	cancel()
	if werr := experiment.WriteRecordsCSV(filepath.Join(dir, name, "jobs.csv"), recs); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// stallTimeout is RunOptions.StallTimeout, or by default long enough for the
// longest job to run time-shared at the MPL with room to spare.
func stallTimeout(o RunOptions, jobs []experiment.Job) time.Duration {
	if o.StallTimeout > 0 {
		return o.StallTimeout
	}
	var longest time.Duration
	for _, j := range jobs {
		longest = max(longest, j.Estimate)
	}
	return max(2*time.Minute, 4*time.Duration(o.MPL)*longest)
}

// dumpNodeStats writes the cluster's GET /v1/nodes?stats=1 to path.
func dumpNodeStats(cl *api.Client, path string) error {
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

// Existing is the configuration of a running cluster, as its controller
// reports it.
type Existing struct {
	Mode       sharing.Mode
	Processors int // of the agents that are up
	Slice      time.Duration
	MPL        int
	Policy     gang.Policy
	// LocalProcessors are those of agents on this host (their API on
	// loopback or on one of this host's addresses): ranks burning CPU there
	// share this host's cores.
	LocalProcessors int
}

// Inspect asks the cluster behind cl for its configuration.
func Inspect(ctx context.Context, cl *api.Client) (Existing, error) {
	rep, err := cl.Nodes(ctx, true)
	if err != nil {
		return Existing{}, err
	}
	if rep.Cluster == nil {
		return Existing{}, errors.New("the controller did not report its configuration")
	}
	cs := rep.Cluster
	e := Existing{Mode: cs.Mode, Slice: cs.Slice.D, MPL: cs.MPL, Policy: cs.Policy}
	local := localAddrs()
	for _, n := range rep.Nodes {
		if n.State != "up" {
			continue
		}
		e.Processors += len(n.Columns)
		if host, _, err := net.SplitHostPort(n.APIAddr); err == nil {
			if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || local[ip.String()]) {
				e.LocalProcessors += len(n.Columns)
			}
		}
	}
	return e, nil
}

// localAddrs are this host's interface addresses.
func localAddrs() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			out[ipn.IP.String()] = true
		}
	}
	return out
}

// hostLoad is this host's 1-minute load average (0 where unknown): a
// measured mode's figures mean little beside a load far above the cores.
func hostLoad() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}
