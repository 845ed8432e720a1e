package measure

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/sharing"
)

// OnCluster makes o a run on the existing cluster o.Cluster: it asks the
// cluster for its configuration (Inspect) and adopts it (Existing.Adopt,
// on this host's cores), returning Adopt's warning and errors.
func (o *RunOptions) OnCluster(ctx context.Context, given func(field string) bool) (warning string, err error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := Inspect(qctx, o.Cluster)
	if err != nil {
		return "", err
	}
	return e.Adopt(o, given, runtime.NumCPU())
}

// Adopt makes o a run on the existing cluster e: e's mode, processors,
// slice and MPL (and policy, when it reports one) replace o's. A field the
// caller gave (given reports it, by RunOptions field name) with another
// value is an error keyed by that field, as are Bandwidth and
// RealtimePriority, which the cluster's agents set: the run would not be
// what was asked for. CPU-burning ranks on more of this host's processors
// than cores are refused unless Work was given as WorkCPU (then a
// warning): they would compete for the cores. Errors and the warning name
// the cluster's address as the field {Addr} (fielderr.Expand).
func (e Existing) Adopt(o *RunOptions, given func(field string) bool, cores int) (warning string, err error) {
	var errs []error
	conflict := func(field string, mine, theirs any) {
		if given(field) && fmt.Sprint(mine) != fmt.Sprint(theirs) {
			errs = append(errs, fielderr.New(field, mine, "the cluster at {Addr} runs %v", theirs))
		}
	}
	conflict("Modes", modesText(o.Modes), e.Mode)
	conflict("Nodes", o.Nodes, e.Processors)
	if e.Mode.TimeShared() {
		conflict("Slice", o.Slice, e.Slice)
		conflict("MPL", o.MPL, e.MPL)
	}
	if e.Policy != "" {
		conflict("Policy", o.Policy, e.Policy)
	}
	for _, field := range []string{"Bandwidth", "RealtimePriority"} {
		if given(field) {
			errs = append(errs, fielderr.New(field, nil, "set on the cluster's agents, not by bench run, when {Addr} is given"))
		}
	}
	if e.LocalProcessors > cores && !(given("Work") && o.Work == WorkWall) {
		msg := fmt.Sprintf("the cluster at {Addr} has %d processors on this host, which has %d cores: ranks burning CPU would compete for them and the measurement would not be the simulated machine's; pass {Work} wall",
			e.LocalProcessors, cores)
		if given("Work") && o.Work == WorkCPU {
			warning = msg + " ({Work} cpu given: running anyway)"
		} else {
			errs = append(errs, fielderr.New("Work", nil, "%s (or {Work} cpu to run anyway)", msg))
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	if e.Processors == 0 {
		return "", errors.New("no processor of the cluster is up")
	}
	e.adoptInto(o, given("Work"))
	return warning, nil
}

// adoptInto sets o's cluster settings to e's.
func (e Existing) adoptInto(o *RunOptions, workGiven bool) {
	o.Modes, o.Nodes = []sharing.Mode{e.Mode}, e.Processors
	if e.Mode.TimeShared() {
		o.Slice, o.MPL = e.Slice, e.MPL
	} else {
		o.MPL = 1
	}
	if e.Policy != "" {
		o.Policy = e.Policy
	}
	if !workGiven {
		o.Work = WorkCPU // agents on their own hosts: burn CPU
	}
}

// modesText is modes as a list flag writes them.
func modesText(modes []sharing.Mode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = string(m)
	}
	return strings.Join(s, ",")
}

// record is the record of a run of o's workload jobs before any mode
// ran, on a local cluster or o.ClusterAddr.
func (o RunOptions) record(jobs []experiment.Job) experiment.Run {
	p, cluster := o.Point, "local"
	if o.Cluster != nil {
		cluster = o.ClusterAddr
	}
	return experiment.Run{Workload: p.Workload, Jobs: p.Jobs, Load: p.Load, Nodes: o.Nodes, Slice: o.Slice, MPL: o.MPL,
		Policy: string(o.Policy), MeanRuntime: o.Machine.MeanRuntime, Work: o.Work, Seed: p.Seed, Cluster: cluster,
		Machine: experiment.CostsOf(o.simulated()), Profile: o.Profile, Started: time.Now(), WorkloadJobs: jobs}
}
