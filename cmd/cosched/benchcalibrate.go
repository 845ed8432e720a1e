package main

import (
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

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/strobe"
)

type benchCalibrateFlags struct {
	nodes     int
	slice     time.Duration
	mpl       int
	work      string
	bandwidth string
	out       string
	stateDir  string
	priority  int
	barriers  int
	pings     int
	stream    int
}

func newBenchCalibrateCmd() *cobra.Command {
	f := benchCalibrateFlags{nodes: 4, slice: 50 * time.Millisecond, mpl: 3, bandwidth: "100MB", out: "profile.json",
		priority: 50, barriers: 60, pings: 1000, stream: 20000}
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure this machine's runtime costs and write a machine profile for the simulator",
		Long: `Start local clusters of agents (as bench run does) and measure what the
simulator needs to model them, then write a machine profile (JSON) that
bench run --profile and sim sweep --profile apply:

  on 2 agents in space mode:
    relay latency     half the round trip of a message between ranks on two
                      agents (ping-pong, --pings round trips)
    relay bandwidth   a stream of --stream messages between two agents
    launch            a one-rank job's start to end, minus its own run time
    compute scale     a rank's wall time over its drawn compute time
  on --nodes agents in bcs mode (--slice, --mpl, --bandwidth):
    switch cost       an agent's stop+continue of ranks at a strobe
    strobe overhead   per slice, boundary until the last agent switched
    delivery delay    per slice, boundary until a rank blocked in a barrier
                      of two agents runs again (--barriers barriers)
    solo sync         whether a one-rank job's barrier waits for a strobe

The agents share this host's monotonic clock, so the delivery delay is
exact. The profile also records the host (name, cores, Go version) and
the date. Takes about half a minute.`,
		Example: "  cosched bench calibrate --out profile.json\n  cosched bench run --profile profile.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchCalibrate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.nodes, "nodes", f.nodes, "agents of the bcs cluster (nodes of one processor; at least 2)")
	fl.DurationVar(&f.slice, "slice", f.slice, "time slice of the bcs cluster")
	fl.IntVar(&f.mpl, "mpl", f.mpl, "multiprogramming level of the bcs cluster")
	fl.StringVar(&f.work, "work", "", "ranks' work: cpu or wall (default: wall when --nodes exceeds the cores, else cpu)")
	fl.StringVar(&f.bandwidth, "bandwidth", f.bandwidth, "bcs: bandwidth per node per second (h_max = bandwidth × slice)")
	fl.StringVar(&f.out, "out", f.out, "the profile to write")
	fl.StringVar(&f.stateDir, "state-dir", "", "where the clusters' state (agent logs, rank output) goes (default: a temporary directory, removed)")
	fl.IntVar(&f.priority, "realtime-priority", f.priority, "agents' SCHED_FIFO priority for the strobe path (0: off)")
	fl.IntVar(&f.barriers, "barriers", f.barriers, "barriers of the delivery-delay probe (one a slice)")
	fl.IntVar(&f.pings, "pings", f.pings, "round trips of the latency probe")
	fl.IntVar(&f.stream, "stream", f.stream, "messages of the bandwidth probe")
	return cmd
}

func (f *benchCalibrateFlags) validate() (work string, err error) {
	var errs []error
	if f.nodes < 2 {
		errs = append(errs, fmt.Errorf("--nodes %d: must be at least 2", f.nodes))
	}
	if f.slice < time.Millisecond {
		errs = append(errs, fmt.Errorf("--slice %v: must be at least 1ms", f.slice))
	}
	if f.mpl < 1 {
		errs = append(errs, fmt.Errorf("--mpl %d: must be at least 1", f.mpl))
	}
	if f.barriers < 10 || f.pings < 10 || f.stream < 10 {
		errs = append(errs, fmt.Errorf("--barriers %d, --pings %d, --stream %d: each must be at least 10", f.barriers, f.pings, f.stream))
	}
	if bw, err := parseSize(f.bandwidth); f.bandwidth != "0" && (err != nil || bw < 1) {
		errs = append(errs, fmt.Errorf("--bandwidth %q: want a size per second (e.g. 100MB) or 0", f.bandwidth))
	}
	if f.out == "" {
		errs = append(errs, errors.New("--out: empty"))
	}
	work = f.work
	switch {
	case work == "" && f.nodes > runtime.NumCPU():
		work = "wall"
	case work == "":
		work = "cpu"
	case work != "cpu" && work != "wall":
		errs = append(errs, fmt.Errorf("--work %q: want cpu or wall", f.work))
	}
	if len(errs) > 0 {
		return "", flagErrors(errs)
	}
	return work, nil
}

func benchCalibrate(ctx context.Context, out, progress io.Writer, f *benchCalibrateFlags) (err error) {
	work, err := f.validate()
	if err != nil {
		return err
	}
	state := f.stateDir
	if state == "" {
		if state, err = os.MkdirTemp("", "cosched-calibrate-"); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		defer os.RemoveAll(state)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("calibrate: locating this binary for the probes: %w", err)
	}
	bw, _ := parseSize(f.bandwidth)
	host, _ := os.Hostname()
	p := &profile.Profile{
		Version: profile.Version,
		Created: time.Now().UTC().Truncate(time.Second),
		Host:    profile.Host{Hostname: host, Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH},
		Cluster: profile.Cluster{Nodes: f.nodes, Slice: f.slice, MPL: f.mpl, Work: work, RealtimePriority: f.priority, Bandwidth: float64(bw)},
	}
	p.Measured.MessageSize = 4096
	cal := calibrator{f: f, exe: exe, work: work, progress: progress}
	if err := cal.space(ctx, filepath.Join(state, "space"), p); err != nil {
		return err
	}
	if err := cal.bcs(ctx, filepath.Join(state, "bcs"), p); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("calibrate: the measurements make no valid profile: %w", err)
	}
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.out, b); err != nil {
		return fmt.Errorf("calibrate: writing the profile: %w", err)
	}
	writeProfileSummary(out, p)
	fmt.Fprintf(out, "\nprofile written to %s (use: cosched bench run --profile %s)\n", f.out, f.out)
	return nil
}

// calibrator runs the probes on local clusters.
type calibrator struct {
	f        *benchCalibrateFlags
	exe      string
	work     string
	progress io.Writer
}

// cluster starts a local cluster, runs fn against it and stops it.
func (c *calibrator) cluster(ctx context.Context, dir string, mode node.Mode, n int, fn func(*localcluster.Cluster) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	fmt.Fprintf(c.progress, "calibrate: starting %d agents in %s mode...\n", n, mode)
	o := localcluster.DefaultOptions()
	o.Agents, o.Mode, o.Slice, o.MPL, o.StateDir, o.RealtimePriority = n, mode, c.f.slice, c.f.mpl, dir, c.f.priority
	if mode == node.Space {
		o.MPL = 1
	}
	bw, _ := parseSize(c.f.bandwidth)
	o.Bandwidth = float64(bw)
	o.Timeout = 30*time.Second + time.Duration(n)*2*time.Second
	rec, err := localcluster.Up(ctx, o)
	if err != nil {
		return fmt.Errorf("calibrate: %s cluster: %w", mode, err)
	}
	defer func() {
		if err := rec.Stop(10 * time.Second); err != nil {
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
	return c.cluster(ctx, dir, node.Space, 2, func(rec *localcluster.Cluster) error {
		api := node.NewClient(rec.API)
		size := strconv.Itoa(p.Measured.MessageSize)
		fmt.Fprintf(c.progress, "calibrate: relay ping-pong and stream...\n")
		ping, err := c.probe(ctx, api, dir, 2, "--test", probePingPong, "--count", strconv.Itoa(c.f.pings), "--size", size)
		if err != nil {
			return err
		}
		if len(ping[0].Samples) == 0 {
			return errors.New("ping-pong probe: no round trips")
		}
		p.Measured.RelayLatency = meanDur(ping[0].Samples) / 2
		st, err := c.probe(ctx, api, dir, 2, "--test", probeStream, "--count", strconv.Itoa(c.f.stream), "--size", size)
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
			id, err := api.Submit(ctx, node.JobSpec{Name: "calibrate-compute", Bench: "100ms,0,transpose,B", BenchIterations: iters,
				BenchWork: c.work, Processors: 1, TimeLimit: node.Duration{D: time.Minute}})
			if err != nil {
				return fmt.Errorf("submit: %w", err)
			}
			ids = append(ids, id)
		}
		var launch []int64
		var scale []float64
		for _, id := range ids {
			j, err := waitDone(ctx, api, id, time.Minute)
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
	return c.cluster(ctx, dir, node.BCS, c.f.nodes, func(rec *localcluster.Cluster) error {
		api := node.NewClient(rec.API)
		fmt.Fprintf(c.progress, "calibrate: bcs delivery delay (%d barriers)...\n", c.f.barriers)
		two, err := c.probe(ctx, api, dir, 2, "--test", probeBarrier, "--count", strconv.Itoa(c.f.barriers))
		if err != nil {
			return err
		}
		solo, err := c.probe(ctx, api, dir, 1, "--test", probeBarrier, "--count", "20")
		if err != nil {
			return err
		}
		// Every agent's slice records: the slice boundaries, and the
		// switching.
		records := map[string][]strobe.SliceRecord{}
		var dues []int64
		var costs []time.Duration
		for _, a := range rec.Agents {
			st, err := node.NewClient(a.API).LocalStats(ctx, 0)
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
		p.Measured.BCSSoloSync = p.Measured.BCSSoloPeriod > c.f.slice/2
		return nil
	})
}

// probe runs a bench-probe job of n ranks and returns every rank's result.
func (c *calibrator) probe(ctx context.Context, api *node.Client, dir string, n int, args ...string) ([]probeResult, error) {
	cmd := append([]string{c.exe, "bench-probe"}, args...)
	id, err := api.Submit(ctx, node.JobSpec{Name: "calibrate-probe", Command: cmd, Processors: n, TimeLimit: node.Duration{D: 2 * time.Minute}})
	if err != nil {
		return nil, fmt.Errorf("submit probe %v: %w", args, err)
	}
	j, err := waitDone(ctx, api, id, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	if j.State != node.Completed {
		return nil, fmt.Errorf("probe %v (job %d) ended %s: %s (rank output under %s)", args, id, j.State, j.Reason, dir)
	}
	res := make([]probeResult, n)
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
func waitDone(ctx context.Context, c *node.Client, id int64, timeout time.Duration) (node.Job, error) {
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

func writeProfileSummary(w io.Writer, p *profile.Profile) {
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
