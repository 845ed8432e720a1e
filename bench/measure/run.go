package measure

import (
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

// RunOptions say how RunModes runs a workload of benchmark jobs.
type RunOptions struct {
	Modes            []sharing.Mode
	Nodes            int // processors (local clusters: agents of one processor)
	Slice            time.Duration
	MPL              int
	Policy           gang.Policy
	Bandwidth        float64 // bcs: bytes per second per node (0: unlimited)
	RealtimePriority int
	Work             string // the ranks' work (WorkCPU or WorkWall)
	// StallTimeout fails a mode when no job ends for this long while jobs
	// run; 0: max(2m, 4 × MPL × the longest estimate).
	StallTimeout time.Duration
	// Cluster is an existing cluster to run on; nil starts a local one per
	// mode (its state under Dir/MODE/state).
	Cluster  *api.Client
	Dir      string        // where each mode's records go (Dir/MODE/jobs.csv)
	Machine  sweep.Machine // the simulated side's machine
	Point    sweep.Point   // the simulated side's sweep point
	Exe      string        // the cosched binary (default: this process's)
	Progress io.Writer     // progress lines (nil: none)
}

// Validate checks every field (errors keyed by field, fielderr; the
// simulated side's as "Point.Jobs", "Machine.MeanRuntime", …).
func (o RunOptions) Validate() error {
	var errs []error
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	seen := map[sharing.Mode]bool{}
	for _, m := range o.Modes {
		switch {
		case !slices.Contains(sharing.Modes(), m):
			bad("Modes", nil, "unknown mode %q (valid: space, gang, bcs)", m)
		case m == sharing.Local:
			bad("Modes", nil, "local is not a scheduling mode to compare (use space, gang, bcs)")
		case seen[m]:
			bad("Modes", nil, "%s twice", m)
		}
		seen[m] = true
	}
	if len(o.Modes) == 0 {
		bad("Modes", nil, "no mode")
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
	if o.Work != WorkCPU && o.Work != WorkWall {
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

// RunModes runs jobs under each of o.Modes in turn, each beside the
// simulator's prediction for the same point, into run.Modes. It stops at
// the first mode that fails; a job that did not complete is an error
// naming it.
func RunModes(ctx context.Context, o RunOptions, jobs []experiment.Job, run *experiment.Run) error {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	var runErr error
	for i, mode := range o.Modes {
		res, err := runMode(ctx, o, mode, jobs, fmt.Sprintf("[%s %d/%d]", mode, i+1, len(o.Modes)))
		if row, serr := experiment.Simulate(ctx, o.Machine, o.Point, mode); serr == nil {
			res.Simulated = &row
		} else if err == nil {
			err = fmt.Errorf("simulating: %w", serr)
		}
		if sj, serr := experiment.SimulateJobs(ctx, o.Machine, o.Point, mode); serr == nil {
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
					filepath.Join(o.Dir, string(m.Mode), "state", "agents"))
			}
		}
	}
	return runErr
}

// runMode runs the workload in one mode: on a fresh local cluster, or on
// o.Cluster.
func runMode(ctx context.Context, o RunOptions, mode sharing.Mode, jobs []experiment.Job, tag string) (res experiment.ModeResult, err error) {
	progress, dir, cl := o.Progress, o.Dir, o.Cluster
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
		fmt.Fprintf(progress, "%s starting %d agents...\n", tag, o.Nodes)
		up := localcluster.DefaultOptions()
		up.Exe, up.Agents, up.Mode, up.Slice, up.MPL, up.Policy = o.Exe, o.Nodes, mode, o.Slice, o.MPL, o.Policy
		up.StateDir, up.RealtimePriority, up.Bandwidth = state, o.RealtimePriority, o.Bandwidth
		if mode == sharing.Space {
			up.MPL = 1
		}
		up.Timeout = 30*time.Second + time.Duration(o.Nodes)*2*time.Second
		rec, err := localcluster.Up(ctx, up)
		if err != nil {
			return res, err
		}
		defer func() {
			if err := rec.Stop(10 * time.Second); err != nil {
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
		path := filepath.Join(dir, string(mode), "nodes-at-stall.json")
		if derr := dumpNodeStats(cl, path); derr == nil {
			err = fmt.Errorf("%w (the agents' state: %s)", err, path)
		}
	}
	res.Jobs = recs
	res.Summary = experiment.Summarize(recs, o.Nodes, metrics.DefaultTau)
	tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	res.Nodes, _ = experiment.CollectNodeTotals(tctx, cl) // best effort: the counters are for the record
	cancel()
	if werr := experiment.WriteRecordsCSV(filepath.Join(dir, string(mode), "jobs.csv"), recs); werr != nil && err == nil {
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
