package measure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/scratch"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/strobe"
)

// StrobeOptions say what Strobe measures.
type StrobeOptions struct {
	Agents           int           // nodes of one processor, at least 2
	Slice            time.Duration // at least 1ms
	MPL              int           // rows of the matrix, each filled by one job
	Duration         time.Duration // how long to measure, after the jobs run
	RealtimePriority int           // the agents' SCHED_FIFO priority (0: off)
	Suspend          string        // how the agents suspend ranks: api.SuspendSignal ("" too) or api.SuspendFreezer
	Fanout           int           // the controller's strobe tree arity (0: direct)
	// Unsealed measures without authentication: the agents have the
	// cluster key but neither seal nor check strobes and heartbeats.
	Unsealed bool
	StateDir string    // the cluster's state (agent logs)
	Exe      string    // the cosched binary (default: this process's)
	Progress io.Writer // progress lines (nil: none)
}

// Validate checks every field (errors keyed by field, fielderr).
func (o StrobeOptions) Validate() error {
	var errs []error
	if o.Agents < 2 || o.Agents > localcluster.MaxAgents {
		errs = append(errs, fielderr.New("Agents", o.Agents, "skew needs at least 2 agents (at most %d)", localcluster.MaxAgents))
	}
	if o.Slice < localcluster.MinSlice || o.Slice > localcluster.MaxSlice {
		errs = append(errs, fielderr.New("Slice", o.Slice, "must be at least 1ms (at most %v)", localcluster.MaxSlice))
	}
	if o.Duration <= 0 {
		errs = append(errs, fielderr.New("Duration", o.Duration, "must be positive"))
	}
	if o.MPL < 1 || o.MPL > localcluster.MaxMPL {
		errs = append(errs, fielderr.New("MPL", o.MPL, "must be at least 1 (at most %d)", localcluster.MaxMPL))
	}
	if o.RealtimePriority < 0 || o.RealtimePriority > 99 {
		errs = append(errs, fielderr.New("RealtimePriority", o.RealtimePriority, "must be 0 (off) to 99"))
	}
	if o.Suspend != "" && o.Suspend != api.SuspendSignal && o.Suspend != api.SuspendFreezer {
		errs = append(errs, fielderr.New("Suspend", o.Suspend, "want signal or freezer"))
	}
	if o.Fanout < 0 || o.Fanout > 255 {
		errs = append(errs, fielderr.New("Fanout", o.Fanout, "must be 0 (direct) to 255"))
	}
	return errors.Join(errs...)
}

// StrobeReport is what `cosched bench strobe` measured.
type StrobeReport struct {
	Agents   int           `json:"agents"`
	Slice    time.Duration `json:"slice_ns"`
	MPL      int           `json:"mpl"`
	Duration time.Duration `json:"duration_ns"`
	Priority int           `json:"realtime_priority"` // asked for; 0: off
	Suspend  string        `json:"suspend"`           // how ranks were suspended: signal or freezer
	Fanout   int           `json:"strobe_fanout"`     // the strobe tree's arity; 0: direct
	Sealed   bool          `json:"sealed"`            // strobes and heartbeats sealed with the cluster key (authenticated)
	// Realtime is each agent's strobe-thread scheduling, by agent.
	Realtime map[string]string `json:"realtime"`
	// ControllerRealtime is "" when the slice clock ran at SCHED_FIFO.
	ControllerRealtime string `json:"controller_realtime_error,omitempty"`

	Slices  int    `json:"slices"` // slices applied by at least two agents
	Applied uint64 `json:"applied"`
	Lost    uint64 `json:"lost"`
	Late    uint64 `json:"late"`

	Skew       strobe.Dist `json:"skew"`
	Latency    strobe.Dist `json:"latency"`
	SwitchCost strobe.Dist `json:"switch_cost"`
	// Delivery and Handling split strobe-to-switch before the switch:
	// from the controller's send to the agent's socket read (network and
	// wake-up), and from that read to the switch's start (opening the
	// seal, decoding, the sequence rules, forwarding).
	Delivery strobe.Dist `json:"delivery"`
	Handling strobe.Dist `json:"handling"`
	SendLate strobe.Dist `json:"send_late"` // the controller's last few thousand strobes
	Overruns uint64      `json:"overruns"`
	Skipped  uint64      `json:"skipped"`
	Idle     strobe.Dist `json:"idle"`     // per slice: boundary to the first agent's switch
	Overhead strobe.Dist `json:"overhead"` // per slice: boundary to the last agent's switch
	// IdleFraction and OverheadFraction are the means over the slice.
	IdleFraction     float64 `json:"idle_fraction"`
	OverheadFraction float64 `json:"overhead_fraction"`
	// PerAgent is each agent's strobe-to-switch latency over the run:
	// one slow agent shows up here before it shows in the skew.
	PerAgent map[string]strobe.Dist `json:"per_agent_latency"`
	// Steal is CPU time the hypervisor took from this (virtual) machine
	// during the measurement (/proc/stat), -1 if unknown: stalls of a few
	// ms on a VM are often this, not cosched.
	Steal time.Duration `json:"steal_ns"`
}

// spin is a rank that only computes: every processor of the active row
// is busy, as in a fine-grained job.
var spin = []string{"sh", "-c", "while :; do :; done"}

// Strobe starts a local gang-mode cluster, fills every row of its matrix
// with a job of CPU-bound ranks, measures the strobes for o.Duration, and
// stops the cluster (its state stays in o.StateDir).
func Strobe(ctx context.Context, o StrobeOptions) (rep *StrobeReport, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	suspend := cmp.Or(o.Suspend, api.SuspendSignal)
	fmt.Fprintf(progress, "starting %d agents (gang, slice %v, MPL %d, suspend %s)...\n", o.Agents, o.Slice, o.MPL, suspend)
	up := localcluster.DefaultOptions()
	up.Exe, up.Agents, up.Slice, up.MPL, up.Policy, up.StateDir, up.RealtimePriority = o.Exe, o.Agents, o.Slice, o.MPL, gang.FCFS, o.StateDir, o.RealtimePriority
	up.Suspend = suspend
	up.StrobeFanout = o.Fanout
	up.UnsealedStrobes = o.Unsealed
	up.Temporary = true // the agents die with this command, however it ends
	// The agents start one after another beside other work: 32 of them
	// took over 94 s at a load average of 46 (3 s each).
	up.Timeout = 30*time.Second + time.Duration(o.Agents)*5*time.Second
	cl, err := localcluster.Up(ctx, up)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := cl.Stop(localcluster.TempStopGrace); err != nil {
			fmt.Fprintf(progress, "warning: %v\n", err)
		}
	}()
	if rep, err = measureStrobes(ctx, progress, cl, o); err != nil {
		return nil, err
	}
	rep.Suspend, rep.Sealed = suspend, !o.Unsealed
	// Report what the agents did, not what was asked: an agent without
	// cgroups suspends with signals.
	if nodes, err := cl.Client().Nodes(ctx, true); err == nil {
		for _, n := range nodes.Nodes {
			if n.Stats != nil && n.Stats.Suspend != suspend {
				return nil, fmt.Errorf("agent %s suspended with %s, not %s (cgroups: %s)", n.Name, n.Stats.Suspend, suspend, n.Stats.Cgroups)
			}
		}
	}
	return rep, nil
}

// StrobeRuns say what StrobeMethods measures: Strobe once per suspension
// method and, for each, once per authentication setting, each on a fresh
// cluster (StrobeOptions.Suspend and StateDir are set per run).
type StrobeRuns struct {
	StrobeOptions
	Methods []string // suspension methods, in turn (none: signal)
	// Auth is AuthOn (sealed), AuthOff (unsealed) or AuthBoth (unsealed
	// first: the baseline), or "" for StrobeOptions.Unsealed alone.
	Auth string
	// Keep keeps every cluster's state directory (named on Progress); a
	// failed run's is always kept.
	Keep bool
}

// The authentication settings StrobeRuns measures.
const (
	AuthOn   = "on"
	AuthOff  = "off"
	AuthBoth = "both"
)

// unsealed are r's authentication settings, in turn (false for a bad Auth).
func (r StrobeRuns) unsealed() (settings []bool, ok bool) {
	switch r.Auth {
	case "":
		return []bool{r.Unsealed}, true
	case AuthOn:
		return []bool{false}, true
	case AuthOff:
		return []bool{true}, true
	case AuthBoth:
		return []bool{true, false}, true
	}
	return nil, false
}

// methods are r's suspension methods, in turn.
func (r StrobeRuns) methods() []string {
	if len(r.Methods) == 0 {
		return []string{api.SuspendSignal}
	}
	return r.Methods
}

// Validate checks Auth and the options of every method, all problems at
// once, keyed by field.
func (r StrobeRuns) Validate() error {
	var errs []error
	if _, ok := r.unsealed(); !ok {
		errs = append(errs, fielderr.New("Auth", r.Auth, "want on, off or both"))
	}
	om := r.StrobeOptions
	om.Suspend = "" // each method's, below: the other fields are said once, not once a method
	errs = append(errs, om.Validate())
	for _, m := range r.methods() {
		om.Suspend = m
		for _, e := range fielderr.All(om.Validate()) {
			if e.Field == "Suspend" {
				errs = append(errs, e)
			}
		}
	}
	return errors.Join(errs...)
}

// StrobeMethods runs r's measurements in turn, by method, then by
// authentication setting, each on a fresh cluster whose state goes to a
// temporary directory (see StrobeRuns.Keep). Everything is checked before
// anything starts (r.Validate).
func StrobeMethods(ctx context.Context, r StrobeRuns) ([]*StrobeReport, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	unsealed, _ := r.unsealed()
	progress := cmp.Or[io.Writer](r.Progress, io.Discard)
	var reps []*StrobeReport
	for _, m := range r.methods() {
		for _, u := range unsealed {
			ou := r.StrobeOptions
			ou.Unsealed = u
			rep, err := strobeOnce(ctx, ou, m, r.Keep, progress)
			if err != nil {
				return nil, err
			}
			reps = append(reps, rep)
		}
	}
	return reps, nil
}

// strobeOnce measures one suspension method on a cluster of its own.
func strobeOnce(ctx context.Context, o StrobeOptions, suspend string, keep bool, progress io.Writer) (rep *StrobeReport, err error) {
	state, swept, err := scratch.New("cosched-bench-strobe-", localcluster.RecordsLiveAgents)
	reportSwept(progress, swept)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	dir := state.Path()
	defer func() {
		switch {
		case keep:
			state.Keep()
			fmt.Fprintf(progress, "cluster state (agent logs) in %s\n", dir)
		case err != nil:
			state.Keep()
			fmt.Fprintf(progress, "cluster state (agent logs) kept in %s\n", dir)
		default:
			state.Remove()
		}
	}()
	o.StateDir, o.Suspend = dir, suspend
	return Strobe(ctx, o)
}

// reportSwept says which state directories of earlier, killed
// benchmarks NewScratch removed (progress may be nil).
func reportSwept(progress io.Writer, swept []string) {
	if progress != nil && len(swept) > 0 {
		fmt.Fprintf(progress, "removed the state of %d killed benchmark(s): %s\n", len(swept), strings.Join(swept, ", "))
	}
}

// WriteReports prints the reports of StrobeMethods(r) (in its order):
// each report, then the authentication settings compared per method when
// there are several, then the methods compared (their last, sealed,
// reports) when there are several.
func (r StrobeRuns) WriteReports(w io.Writer, reps []*StrobeReport) {
	settings, _ := r.unsealed()
	methods, auths := len(r.methods()), len(settings)
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		WriteStrobeReport(w, rep)
	}
	if auths > 1 {
		for i := 0; i < len(reps); i += auths {
			fmt.Fprintln(w)
			WriteAuthComparison(w, reps[i:i+auths])
		}
	}
	if methods > 1 {
		var sealed []*StrobeReport // one report per suspension method
		for i := auths - 1; i < len(reps); i += auths {
			sealed = append(sealed, reps[i])
		}
		fmt.Fprintln(w)
		WriteSuspendComparison(w, sealed)
	}
}

// WriteStrobeJSON writes reps as indented JSON: the report alone when
// there is one, else their list.
func WriteStrobeJSON(w io.Writer, reps []*StrobeReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if len(reps) == 1 {
		return enc.Encode(reps[0])
	}
	return enc.Encode(reps)
}

// WriteSuspendComparison sets the suspension methods' switch figures side
// by side, each with its ratio to the first's.
func WriteSuspendComparison(w io.Writer, reps []*StrobeReport) {
	if len(reps) == 0 {
		return
	}
	fmt.Fprintln(w, "suspension methods compared (ratio to "+reps[0].Suspend+"):")
	rows := [][]string{{"", "switch cost p50", "switch cost p99", "skew p50", "skew p99", "row start, last agent p50"}}
	base := reps[0]
	for _, r := range reps {
		rows = append(rows, []string{r.Suspend, ratio(r.SwitchCost.P50, base.SwitchCost.P50), ratio(r.SwitchCost.P99, base.SwitchCost.P99),
			ratio(r.Skew.P50, base.Skew.P50), ratio(r.Skew.P99, base.Skew.P99), ratio(r.Overhead.P50, base.Overhead.P50)})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// WriteAuthComparison sets the figures of unsealed and sealed runs (the
// cost of authenticating strobes and heartbeats) side by side, as ratios
// to the first report.
func WriteAuthComparison(w io.Writer, reps []*StrobeReport) {
	if len(reps) == 0 {
		return
	}
	name := func(r *StrobeReport) string {
		if r.Sealed {
			return "sealed"
		}
		return "unsealed"
	}
	fmt.Fprintf(w, "authentication compared (suspend %s; ratio to %s):\n", cmp.Or(reps[0].Suspend, api.SuspendSignal), name(reps[0]))
	rows := [][]string{{"", "skew p50", "skew p99", "strobe-to-switch p50", "strobe-to-switch p99", "handling p50", "row start, last agent p50", "lost"}}
	base := reps[0]
	for _, r := range reps {
		rows = append(rows, []string{name(r), ratio(r.Skew.P50, base.Skew.P50), ratio(r.Skew.P99, base.Skew.P99),
			ratio(r.Latency.P50, base.Latency.P50), ratio(r.Latency.P99, base.Latency.P99), ratio(r.Handling.P50, base.Handling.P50),
			ratio(r.Overhead.P50, base.Overhead.P50), fmt.Sprint(r.Lost)})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// ratio is a with its ratio to the baseline b.
func ratio(a, b time.Duration) string {
	if b == 0 {
		return fmtDur(a)
	}
	return fmt.Sprintf("%s (×%.2f)", fmtDur(a), float64(a)/float64(b))
}

// pollStats asks every agent for its statistics (and records since
// since(name)), a few at a time: the agents answer while their ranks keep
// every processor busy, so one agent's slow answer must not hold up the
// others, nor fail the run. Each agent gets statsAttempts tries, each
// within a deadline that grows with the cluster (more agents share the
// processors); only an agent that never answers fails the poll. At most
// parallel agents are asked at once.
func pollStats(ctx context.Context, agents map[string]*api.Client, parallel int, since func(string) uint64) (map[string]api.NodeStats, error) {
	type answer struct {
		name string
		st   api.NodeStats
		err  error
	}
	out := make(chan answer, len(agents))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	perTry := statsDeadline(len(agents))
	for name, c := range agents {
		from := since(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var st api.NodeStats
			var err error
			for range statsAttempts {
				tctx, cancel := context.WithTimeout(ctx, perTry)
				st, err = c.LocalStats(tctx, from)
				cancel()
				if err == nil || ctx.Err() != nil {
					break
				}
			}
			out <- answer{name, st, err}
		}()
	}
	wg.Wait()
	close(out)
	all := make(map[string]api.NodeStats, len(agents))
	var errs []error
	for a := range out {
		if a.err != nil {
			errs = append(errs, fmt.Errorf("agent %s: %d tries of %v: %w", a.name, statsAttempts, perTry, a.err))
			continue
		}
		all[a.name] = a.st
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return all, nil
}

// statsParallel agents are asked for their statistics at once before and
// after the measurement.
const statsParallel = 4

// statsAttempts is how often an agent is asked before the poll fails.
const statsAttempts = 3

// statsDeadline bounds one statistics call to one of n agents: 10 s, and
// 250 ms more per agent sharing the host.
func statsDeadline(n int) time.Duration {
	return 10*time.Second + time.Duration(n)*250*time.Millisecond
}

func measureStrobes(ctx context.Context, progress io.Writer, rec *localcluster.Cluster, o StrobeOptions) (*StrobeReport, error) {
	ctl := rec.Client()
	var ids []int64
	for i := range o.MPL {
		id, err := ctl.Submit(ctx, api.JobSpec{Name: fmt.Sprintf("spin%d", i), Command: spin,
			Processors: o.Agents, TimeLimit: api.Duration{D: o.Duration + 5*time.Minute}})
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		ids = append(ids, id)
	}
	defer func() {
		// Cancel explicitly so that the report can say the jobs ended;
		// cluster down would kill the ranks anyway.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, id := range ids {
			_ = ctl.Cancel(cctx, id)
		}
	}()
	if err := waitRunning(ctx, ctl, ids, 30*time.Second); err != nil {
		return nil, err
	}

	agents := make(map[string]*api.Client, len(rec.Agents))
	for _, a := range rec.Agents {
		agents[a.Name] = rec.ClientFor(a.API)
	}
	// Start after a short settling time and from each agent's current
	// slice, then poll often enough that no record leaves an agent's ring
	// (4096 slices) unseen.
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return nil, err
	}
	base := map[string]api.NodeStats{}
	since := map[string]uint64{}
	records := map[string][]strobe.SliceRecord{}
	rep := &StrobeReport{Agents: o.Agents, Slice: o.Slice, MPL: o.MPL, Duration: o.Duration, Priority: o.RealtimePriority, Fanout: o.Fanout, Realtime: map[string]string{}}
	first, err := pollStats(ctx, agents, statsParallel, func(string) uint64 { return ^uint64(0) })
	if err != nil {
		return nil, err
	}
	for name, st := range first {
		base[name], since[name] = st, st.Strobe.LastSeq
		rep.Realtime[name] = st.Realtime
	}
	// During the measurement one agent at a time answers (as few as
	// possible are disturbed at once); before and after it, a few.
	poll := func(parallel int) (map[string]api.NodeStats, error) {
		all, err := pollStats(ctx, agents, parallel, func(name string) uint64 { return since[name] })
		if err != nil {
			return nil, err
		}
		last := map[string]api.NodeStats{}
		for name, st := range all {
			for _, r := range st.Records {
				if r.Epoch == base[name].Strobe.Epoch && r.Seq > since[name] {
					records[name] = append(records[name], r)
					since[name] = r.Seq
				}
			}
			last[name] = st
		}
		return last, nil
	}
	stealBefore := hostSteal()
	fmt.Fprintf(progress, "measuring for %v...\n", o.Duration)
	every := min(10*time.Second, 1000*o.Slice) // a quarter of the agents' 4096-record rings
	end := time.Now().Add(o.Duration)
	for time.Now().Before(end) {
		if err := sleepCtx(ctx, min(every, time.Until(end))); err != nil {
			return nil, err
		}
		if _, err := poll(1); err != nil {
			return nil, err
		}
	}
	last, err := poll(statsParallel)
	if err != nil {
		return nil, err
	}
	rep.Steal = -1
	if stealAfter := hostSteal(); stealBefore >= 0 && stealAfter >= 0 {
		rep.Steal = stealAfter - stealBefore
	}
	nodes, err := ctl.Nodes(ctx, true)
	if err != nil {
		return nil, err
	}
	if nodes.Cluster != nil {
		t := nodes.Cluster.Ticks
		rep.SendLate, rep.Overruns, rep.Skipped, rep.ControllerRealtime = t.SendLate, t.Overruns, t.Skipped, t.RealtimeError
	}
	var costs, delivery, handling []time.Duration
	rep.PerAgent = map[string]strobe.Dist{}
	for name, st := range last {
		var lat []time.Duration
		for _, r := range records[name] {
			lat = append(lat, time.Duration(r.SwitchedMono-r.SentMono))
		}
		rep.PerAgent[name] = durationDist(lat)
		b := base[name].Strobe
		rep.Applied += st.Strobe.Applied - b.Applied
		rep.Lost += st.Strobe.Lost - b.Lost
		rep.Late += st.Strobe.Late - b.Late
		for _, r := range records[name] {
			costs = append(costs, r.SwitchCost)
			delivery = append(delivery, time.Duration(r.RecvMono-r.SentMono))
			handling = append(handling, time.Duration(r.SwitchedMono-r.RecvMono)-r.SwitchCost)
		}
	}
	sk := strobe.Skew(records)
	rep.Slices, rep.Skew, rep.Latency, rep.Idle, rep.Overhead = sk.Slices, sk.Skew, sk.Latency, sk.Idle, sk.Overhead
	rep.SwitchCost = durationDist(costs)
	rep.Delivery, rep.Handling = durationDist(delivery), durationDist(handling)
	rep.IdleFraction = float64(sk.Idle.Mean) / float64(o.Slice)
	rep.OverheadFraction = float64(sk.Overhead.Mean) / float64(o.Slice)
	if rep.Slices == 0 {
		return rep, errors.New("no slice was seen by two agents: are the agents receiving strobes? (run with --keep and read the agent logs)")
	}
	return rep, nil
}

// hostSteal is the CPU time stolen from this machine by its hypervisor so
// far (the steal column of /proc/stat, in USER_HZ = 100 ticks a second),
// or -1 if it cannot be read.
func hostSteal() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return -1
	}
	ticks, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return -1
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// durationDist summarises durations the way strobe.Dist does.
func durationDist(ds []time.Duration) strobe.Dist {
	if len(ds) == 0 {
		return strobe.Dist{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	at := func(p int) time.Duration { return ds[max(1, (p*len(ds)+99)/100)-1] }
	return strobe.Dist{N: len(ds), Mean: sum / time.Duration(len(ds)), P50: at(50), P99: at(99), Max: ds[len(ds)-1]}
}

func waitRunning(ctx context.Context, c *api.Client, ids []int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running := 0
		for _, id := range ids {
			j, err := c.Job(ctx, id)
			if err != nil {
				return err
			}
			if j.State.Done() {
				return fmt.Errorf("benchmark job %d ended (%s %s) before the measurement", id, j.State, j.Reason)
			}
			if j.State == api.Running {
				running++
			}
		}
		if running == len(ids) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("benchmark jobs not all running after %v", timeout)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WriteStrobeReport prints r as a table and a few lines of conclusions.
func WriteStrobeReport(w io.Writer, r *StrobeReport) {
	auth := "sealed (authenticated)"
	if !r.Sealed {
		auth = "unsealed (no authentication)"
	}
	fmt.Fprintf(w, "strobe benchmark: %d agents on this host, gang mode, slice %v, MPL %d (every row a job of %d busy ranks), suspend %s, strobes %s, %v measured\n\n",
		r.Agents, r.Slice, r.MPL, r.Agents, cmp.Or(r.Suspend, api.SuspendSignal), auth, r.Duration)
	rows := [][]string{{"", "p50", "p99", "max", "mean", "n"}}
	add := func(name string, d strobe.Dist) {
		rows = append(rows, []string{name, fmtDur(d.P50), fmtDur(d.P99), fmtDur(d.Max), fmtDur(d.Mean), fmt.Sprint(d.N)})
	}
	add("switch skew", r.Skew)
	add("strobe-to-switch", r.Latency)
	add("  delivery (send to read)", r.Delivery)
	add("  handling (read to switch)", r.Handling)
	add("switch cost", r.SwitchCost)
	add("send lateness", r.SendLate)
	add("row start, first agent", r.Idle)
	add("row start, last agent", r.Overhead)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(w, "\noverhead per slice (mean, from the slice boundary): %.2f%% until every agent runs the new row, %.2f%% with no rank of it running\n",
		100*r.OverheadFraction, 100*r.IdleFraction)
	if r.OverheadFraction > 1 {
		fmt.Fprintln(w, "(over 100%: on average the last agent switches more than a slice late; the agents run whole slices behind the controller)")
	}
	fmt.Fprintf(w, "slices: %d measured (seen by two or more agents); %d strobes applied, %d lost, %d late; controller: %d overruns, %d slices skipped\n",
		r.Slices, r.Applied, r.Lost, r.Late, r.Overruns, r.Skipped)
	if len(r.PerAgent) > 0 {
		names := slices.Sorted(maps.Keys(r.PerAgent))
		worst := slices.MaxFunc(names, func(a, b string) int { return cmp.Compare(r.PerAgent[a].P99, r.PerAgent[b].P99) })
		best := slices.MinFunc(names, func(a, b string) int { return cmp.Compare(r.PerAgent[a].P99, r.PerAgent[b].P99) })
		fmt.Fprintf(w, "strobe-to-switch p99 by agent: best %s %s, worst %s %s (max %s)\n",
			best, fmtDur(r.PerAgent[best].P99), worst, fmtDur(r.PerAgent[worst].P99), fmtDur(r.PerAgent[worst].Max))
	}
	if r.Steal >= 0 {
		fmt.Fprintf(w, "host: %s of CPU time stolen by the hypervisor during the run (/proc/stat steal)\n", fmtDur(r.Steal))
	}
	normal := 0
	for _, s := range r.Realtime {
		if s == "" || s[0] == 'n' {
			normal++
		}
	}
	switch {
	case r.Priority == 0:
		fmt.Fprintln(w, "real-time priority: off (--realtime-priority 0); the agents ran at their nice value")
	case normal == 0 && r.ControllerRealtime == "":
		fmt.Fprintln(w, "real-time priority: every agent's strobe path and the controller's clock ran at SCHED_FIFO")
	default:
		names := slices.Sorted(maps.Keys(r.Realtime))
		fmt.Fprintf(w, "real-time priority NOT in effect (%d of %d agents at normal priority", normal, len(names))
		if r.ControllerRealtime != "" {
			fmt.Fprintf(w, "; controller clock: %s", r.ControllerRealtime)
		}
		fmt.Fprintf(w, "): run as root or with CAP_SYS_NICE for the figures a deployment gets; e.g. %s: %s\n", names[0], r.Realtime[names[0]])
	}
}

// fmtDur prints a duration with three significant digits (118µs, 1.26ms).
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}
