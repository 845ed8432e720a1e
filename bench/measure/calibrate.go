package measure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/scratch"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/strobe"
)

// Work is a benchmark rank's compute work.
const (
	WorkCPU  = "cpu"  // burn CPU time
	WorkWall = "wall" // wait in wall time, excluding stops
)

// DefaultWork is the ranks' work for local agents of one processor
// each: wall when they outnumber this machine's cores (CPU-burning ranks
// would compete for cores), else cpu.
func DefaultWork(agents int) string {
	if agents > runtime.NumCPU() {
		return WorkWall
	}
	return WorkCPU
}

// CalibrateOptions say what Calibrate measures on.
type CalibrateOptions struct {
	Nodes            int           // agents of the bcs cluster, at least 2
	Slice            time.Duration // the bcs cluster's slice
	MPL              int           // the bcs cluster's MPL
	Work             string        // the ranks' work (WorkCPU, WorkWall; "": DefaultWork)
	Bandwidth        float64       // bcs: bytes per second per node (0: unlimited)
	RealtimePriority int
	Barriers         int // barriers of the delivery-delay probe (one a slice)
	Pings            int // round trips of the latency probe
	Stream           int // messages of the bandwidth probe
	// StateDir is where the clusters' state (agent logs, rank output)
	// goes; "": a temporary directory, removed at the end.
	StateDir string
	Exe      string    // the cosched binary (default: this process's)
	Progress io.Writer // progress lines (nil: none)
}

// DefaultCalibrateOptions are bench calibrate's defaults.
func DefaultCalibrateOptions() CalibrateOptions {
	return CalibrateOptions{Nodes: 4, Slice: 50 * time.Millisecond, MPL: 3, Bandwidth: 100e6, RealtimePriority: 50,
		Barriers: 60, Pings: 1000, Stream: 20000}
}

// Validate checks every field (errors keyed by field, fielderr).
func (o CalibrateOptions) Validate() error {
	var errs []error
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	if o.Nodes < 2 || o.Nodes > localcluster.MaxAgents {
		bad("Nodes", o.Nodes, "must be at least 2 (at most %d)", localcluster.MaxAgents)
	}
	if o.Slice < localcluster.MinSlice || o.Slice > localcluster.MaxSlice {
		bad("Slice", o.Slice, "must be at least 1ms (at most %v)", localcluster.MaxSlice)
	}
	if o.MPL < 1 || o.MPL > localcluster.MaxMPL {
		bad("MPL", o.MPL, "must be at least 1 (at most %d)", localcluster.MaxMPL)
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"Barriers", o.Barriers}, {"Pings", o.Pings}, {"Stream", o.Stream}} {
		if c.n < 10 || c.n > 10_000_000 {
			bad(c.field, c.n, "must be from 10 to 10000000")
		}
	}
	if !(o.Bandwidth >= 0) || o.Bandwidth > math.MaxInt64 {
		bad("Bandwidth", o.Bandwidth, "want bytes per second, or 0 for unlimited")
	}
	if o.Work != "" && o.Work != WorkCPU && o.Work != WorkWall {
		bad("Work", fmt.Sprintf("%q", o.Work), "want cpu or wall")
	}
	if o.RealtimePriority < 0 || o.RealtimePriority > 99 {
		bad("RealtimePriority", o.RealtimePriority, "must be 0 (off) to 99")
	}
	return errors.Join(errs...)
}

// Calibrate starts local clusters (2 agents in space mode, then o.Nodes in
// bcs mode), runs the probes on them, and returns the machine profile.
func Calibrate(ctx context.Context, o CalibrateOptions) (*profile.Profile, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.StateDir == "" {
		state, swept, err := scratch.New("cosched-calibrate-", localcluster.RecordsLiveAgents)
		reportSwept(o.Progress, swept)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		defer state.Remove()
		o.StateDir = state.Path()
	}
	o.Work = cmp.Or(o.Work, DefaultWork(o.Nodes))
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("calibrate: locating this binary for the probes: %w", err)
		}
		o.Exe = exe
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	host, _ := os.Hostname()
	p := &profile.Profile{
		Version: profile.Version,
		Created: time.Now().UTC().Truncate(time.Second),
		Host:    profile.Host{Hostname: host, Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH},
		Cluster: profile.Cluster{Nodes: o.Nodes, Slice: o.Slice, MPL: o.MPL, Work: o.Work, RealtimePriority: o.RealtimePriority, Bandwidth: o.Bandwidth},
	}
	p.Measured.MessageSize = 4096
	cal := calibrator{o: o, progress: progress}
	if err := cal.space(ctx, filepath.Join(o.StateDir, "space"), p); err != nil {
		return nil, err
	}
	if err := cal.bcs(ctx, filepath.Join(o.StateDir, "bcs"), p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: the measurements make no valid profile: %w", err)
	}
	return p, nil
}

// calibrator runs the probes on local clusters.
type calibrator struct {
	o        CalibrateOptions
	progress io.Writer
}

// cluster starts a local cluster, runs fn against it and stops it.
func (c *calibrator) cluster(ctx context.Context, dir string, mode sharing.Mode, n int, fn func(*localcluster.Cluster) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	fmt.Fprintf(c.progress, "calibrate: starting %d agents in %s mode...\n", n, mode)
	o := localcluster.DefaultOptions()
	o.Agents, o.Mode, o.Slice, o.MPL, o.StateDir, o.RealtimePriority = n, mode, c.o.Slice, c.o.MPL, dir, c.o.RealtimePriority
	if mode == sharing.Space {
		o.MPL = 1
	}
	o.Exe, o.Bandwidth = c.o.Exe, c.o.Bandwidth
	o.Temporary = true // the agents die with this command, however it ends
	o.Timeout = 30*time.Second + time.Duration(n)*2*time.Second
	rec, err := localcluster.Up(ctx, o)
	if err != nil {
		return fmt.Errorf("calibrate: %s cluster: %w", mode, err)
	}
	defer func() {
		if err := rec.Stop(localcluster.TempStopGrace); err != nil {
			fmt.Fprintf(c.progress, "calibrate: warning: %v\n", err)
		}
	}()
	if err := fn(rec); err != nil {
		return fmt.Errorf("calibrate: %s cluster: %w", mode, err)
	}
	return nil
}

// space measures the relays, the launch and the compute scale.
func (c *calibrator) space(ctx context.Context, dir string, p *profile.Profile) error {
	return c.cluster(ctx, dir, sharing.Space, 2, func(rec *localcluster.Cluster) error {
		client := rec.Client()
		size := strconv.Itoa(p.Measured.MessageSize)
		fmt.Fprintf(c.progress, "calibrate: relay ping-pong and stream...\n")
		ping, err := c.probe(ctx, client, dir, 2, "--test", ProbePingPong, "--count", strconv.Itoa(c.o.Pings), "--size", size)
		if err != nil {
			return err
		}
		if len(ping[0].Samples) == 0 {
			return errors.New("ping-pong probe: no round trips")
		}
		p.Measured.RelayLatency = meanDur(ping[0].Samples) / 2
		st, err := c.probe(ctx, client, dir, 2, "--test", ProbeStream, "--count", strconv.Itoa(c.o.Stream), "--size", size)
		if err != nil {
			return err
		}
		if st[0].Elapsed <= 0 {
			return errors.New("stream probe: no time measured")
		}
		p.Measured.RelayBandwidth = float64(st[0].Bytes) / time.Duration(st[0].Elapsed).Seconds()

		// Launch and compute scale: one-rank jobs that only compute
		// (transpose on one rank has no messages), one per agent at once.
		fmt.Fprintf(c.progress, "calibrate: launch and compute...\n")
		// The grain is the workloads' typical one (w0–w4: 50–200 ms).
		const iters, grain = 10, 100 * time.Millisecond
		var ids []int64
		for range 2 {
			id, err := client.Submit(ctx, api.JobSpec{Name: "calibrate-compute", Bench: "100ms,0,transpose,B", BenchIterations: iters,
				BenchWork: c.o.Work, Processors: 1, TimeLimit: api.Duration{D: time.Minute}})
			if err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			ids = append(ids, id)
		}
		var launch []int64
		var scale []float64
		for _, id := range ids {
			j, err := waitDone(ctx, client, id, time.Minute)
			if err != nil {
				return err
			}
			if len(j.Ranks) != 1 || j.Ranks[0].Bench == nil || j.Start == nil || j.End == nil {
				return fmt.Errorf("compute job %d: no rank report", id)
			}
			b := j.Ranks[0].Bench
			launch = append(launch, int64(j.End.Sub(*j.Start)-b.Wall.D))
			scale = append(scale, float64(b.Wall.D)/float64(iters*grain))
		}
		p.Measured.Launch = max(0, meanDur(launch))
		p.Measured.ComputeScale = max(1, (scale[0]+scale[1])/2)
		return nil
	})
}

// bcs measures the slice switching and the delivery delay.
func (c *calibrator) bcs(ctx context.Context, dir string, p *profile.Profile) error {
	return c.cluster(ctx, dir, sharing.BCS, c.o.Nodes, func(rec *localcluster.Cluster) error {
		client := rec.Client()
		fmt.Fprintf(c.progress, "calibrate: bcs delivery delay (%d barriers)...\n", c.o.Barriers)
		two, err := c.probe(ctx, client, dir, 2, "--test", ProbeBarrier, "--count", strconv.Itoa(c.o.Barriers))
		if err != nil {
			return err
		}
		solo, err := c.probe(ctx, client, dir, 1, "--test", ProbeBarrier, "--count", "20")
		if err != nil {
			return err
		}
		// Every agent's slice records: the slice boundaries, and the
		// switching.
		records := map[string][]strobe.SliceRecord{}
		var dues []int64
		var costs []time.Duration
		for _, a := range rec.Agents {
			st, err := rec.ClientFor(a.API).LocalStats(ctx, 0)
			if err != nil {
				return fmt.Errorf("agent %s: %w", a.Name, err)
			}
			records[a.Name] = st.Records
			for _, r := range st.Records {
				if r.DueMono > 0 {
					dues = append(dues, r.DueMono)
				}
				costs = append(costs, r.SwitchCost)
			}
		}
		slices.Sort(dues)
		dues = slices.Compact(dues)
		sk := strobe.Skew(records)
		if sk.Slices == 0 || len(costs) == 0 {
			return errors.New("no slice records: are the agents receiving strobes?")
		}
		cost := durationDist(costs)
		p.Measured.SwitchCost, p.Measured.SwitchCostP99 = cost.Mean, cost.P99
		p.Measured.StrobeOverhead, p.Measured.StrobeIdle, p.Measured.Slices = sk.Overhead.Mean, sk.Idle.Mean, sk.Slices

		// Delivery: each release after the slice boundary before it (the
		// first few barriers, before both ranks ran, are left out).
		var delays []time.Duration
		for _, r := range two {
			for _, m := range r.Mono[min(5, len(r.Mono)):] {
				i, found := slices.BinarySearch(dues, m)
				if found {
					delays = append(delays, 0)
				} else if i > 0 {
					delays = append(delays, time.Duration(m-dues[i-1]))
				}
			}
		}
		if len(delays) == 0 {
			return errors.New("delivery probe: no release could be placed in a slice")
		}
		d := durationDist(delays)
		slices.Sort(delays)
		p.Measured.BCSDelivery, p.Measured.BCSDeliveryP90 = d.Mean, delays[len(delays)*9/10]
		// Solo: back-to-back barriers of one rank; a slice apart when they
		// wait for strobes, microseconds apart when they do not.
		m := solo[0].Mono
		if len(m) < 3 {
			return errors.New("solo barrier probe: too few barriers")
		}
		p.Measured.BCSSoloPeriod = time.Duration((m[len(m)-1] - m[1]) / int64(len(m)-2))
		p.Measured.BCSSoloSync = p.Measured.BCSSoloPeriod > c.o.Slice/2
		return nil
	})
}

// probe runs a bench-probe job of n ranks and returns every rank's result.
func (c *calibrator) probe(ctx context.Context, client *api.Client, dir string, n int, args ...string) ([]ProbeResult, error) {
	cmd := append([]string{c.o.Exe, "bench-probe"}, args...)
	id, err := client.Submit(ctx, api.JobSpec{Name: "calibrate-probe", Command: cmd, Processors: n, TimeLimit: api.Duration{D: 2 * time.Minute}})
	if err != nil {
		return nil, fmt.Errorf("submit probe %v: %w", args, err)
	}
	j, err := waitDone(ctx, client, id, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	if j.State != api.Completed {
		return nil, fmt.Errorf("probe %v (job %d) ended %s: %s (rank output under %s)", args, id, j.State, j.Reason, dir)
	}
	res := make([]ProbeResult, n)
	for r := range n {
		files, _ := filepath.Glob(filepath.Join(dir, "agents", "*", "jobs", strconv.FormatInt(id, 10), fmt.Sprintf("rank-%d.out", r)))
		if len(files) != 1 {
			return nil, fmt.Errorf("probe job %d: rank %d's output not found under %s", id, r, dir)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			return nil, fmt.Errorf("probe job %d: %w", id, err)
		}
		if err := json.Unmarshal(b, &res[r]); err != nil {
			return nil, fmt.Errorf("probe job %d: rank %d's output %s: %w", id, r, files[0], err)
		}
	}
	return res, nil
}

// waitDone polls job id until it ends.
func waitDone(ctx context.Context, c *api.Client, id int64, timeout time.Duration) (api.Job, error) {
	deadline := time.Now().Add(timeout)
	for {
		j, err := c.Job(ctx, id)
		if err != nil {
			return j, fmt.Errorf("job %d: %w", id, err)
		}
		if j.State.Done() {
			return j, nil
		}
		if time.Now().After(deadline) {
			_ = c.Cancel(ctx, id)
			return j, fmt.Errorf("job %d did not end within %v (cancelled)", id, timeout)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return j, err
		}
	}
}

func meanDur(ns []int64) time.Duration {
	if len(ns) == 0 {
		return 0
	}
	var s float64
	for _, x := range ns {
		s += float64(x)
	}
	return time.Duration(math.Round(s / float64(len(ns))))
}

// WriteProfileSummary prints p's measurements, one a line, with what the
// simulator makes of them.
func WriteProfileSummary(w io.Writer, p *profile.Profile) {
	m := p.Measured
	fmt.Fprintf(w, "machine profile: %s, %d cores, %s; %d agents, bcs slice %v, MPL %d, %s work\n\n",
		p.Host.Hostname, p.Host.Cores, p.Host.GoVersion, p.Cluster.Nodes, p.Cluster.Slice, p.Cluster.MPL, p.Cluster.Work)
	fmt.Fprintf(w, "  switch cost (stop+continue)   %v mean, %v p99 (simulator: process switch)\n", fmtDur(m.SwitchCost), fmtDur(m.SwitchCostP99))
	fmt.Fprintf(w, "  strobe overhead per slice     %v until every agent switched, %v until the first (%d slices; simulator: job switch)\n",
		fmtDur(m.StrobeOverhead), fmtDur(m.StrobeIdle), m.Slices)
	fmt.Fprintf(w, "  relay latency                %v one way (%d-byte ping-pong / 2)\n", fmtDur(m.RelayLatency), m.MessageSize)
	fmt.Fprintf(w, "  relay bandwidth              %.0f MB/s (stream of %d-byte messages)\n", m.RelayBandwidth/1e6, m.MessageSize)
	fmt.Fprintf(w, "  job launch                   %v (start to end minus the rank's run)\n", fmtDur(m.Launch))
	fmt.Fprintf(w, "  compute scale                %.3f (rank run time / drawn compute)\n", m.ComputeScale)
	fmt.Fprintf(w, "  bcs delivery delay           %v mean, %v p90 (slice boundary → blocked rank runs)\n", fmtDur(m.BCSDelivery), fmtDur(m.BCSDeliveryP90))
	fmt.Fprintf(w, "  bcs one-rank barrier         %v apart: waits for the strobe: %v\n", fmtDur(m.BCSSoloPeriod), m.BCSSoloSync)
}
