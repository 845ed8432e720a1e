package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/jobcg"
	"github.com/cosched/cosched/node/rank"
)

// This file connects the agent to its jobs' cgroups (node/jobcg): a
// cgroup per job at launch, born-inside ranks, whole-cgroup kills, the
// out-of-memory verdict and the accounting that goes with a job's last
// rank exit on this node.

// openCgroups opens the agent's subtree. Its name joins the agent's name
// and a digest of its state directory: stable across restarts (a new
// life finds and cleans the old one's jobs) and distinct for two
// clusters on one host that reuse agent names (tests, cluster up).
func openCgroups(cfg Config, log *zap.Logger, keep ...int64) (*jobcg.Tree, error) {
	t, err := jobcg.Open(jobcg.Config{Agent: cgroupSubtree(cfg), Mode: cfg.Cgroups, CPUWeight: cfg.JobsCPUWeight, Log: log, Keep: keep})
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	if cfg.Suspend == api.SuspendFreezer && t.Mode() == jobcg.ModeNone {
		log.Warn("--suspend freezer needs cgroups; suspending with signals", zap.String("reason", t.Reason()))
	}
	return t, nil
}

// cgroupSubtree names an agent's cgroup subtree: its name and a digest of
// its state directory, so that two agents of one name on a host (loopback
// clusters of different tests) never share one, and a restarted agent finds
// its previous life's.
func cgroupSubtree(cfg Config) string {
	sum := sha256.Sum256([]byte(cfg.StateDir))
	return cfg.Name + "-" + hex.EncodeToString(sum[:4])
}

// lockFileName is the file in an agent's state directory whose lock the
// running agent holds.
const lockFileName = "agent.lock"

// lockWait is how long taking a state directory's lock waits for its
// holder to let go: an agent killed a moment ago (a crash, then systemd's
// or cluster up's restart) releases it only when the last of its threads
// has exited, after it already looks dead from outside.
const lockWait = 5 * time.Second

// errStateDirInUse is lockStateDir's error when an agent holds the lock.
var errStateDirInUse = errors.New("is in use by a running agent")

// lockStateDir takes the state directory's lock (flock, released by the
// kernel when the agent dies): two agents must never share a state
// directory, and CleanupCgroups must never run beside its agent. A lock
// held for longer than lockWait, or until ctx ends, is a running agent's.
func lockStateDir(ctx context.Context, dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := openStateDirLock(dir)
	if err != nil {
		return nil, err
	}
	waited, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	for {
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("state dir lock %s: %w", path, err)
		}
		if !held {
			return f, nil
		}
		select {
		case <-waited.Done():
			f.Close()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("state dir lock %s: %w", path, context.Cause(ctx))
			}
			return nil, fmt.Errorf("state dir %s %w (%s is locked); give each agent its own --state-dir", dir, errStateDirInUse, path)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// openStateDirLock opens the state directory's lock file.
func openStateDirLock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	return f, nil
}

// tryLock takes f's lock if no other open file holds it, and reports
// whether one does (then f has not taken it).
func tryLock(f *os.File) (held bool, err error) {
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// CleanupCgroups kills every process in the job cgroups that an agent of
// cfg's Name and StateDir left and removes them: for an agent that died
// without stopping (SIGKILL, a crash) and will not start again, whose
// ranks' escaped children would otherwise live on (the next start of the
// agent does the same). It returns how many job cgroups it cleaned, and
// refuses while that agent runs (its state directory is locked). It kills
// the kept ranks of an agent with --keep-ranks too, unless cfg.KeepRanks
// says the agent will start again and take them (then their cgroups stay).
func CleanupCgroups(cfg Config) (int, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return 0, fmt.Errorf("node: state dir: %w", err)
	}
	cfg.StateDir = abs
	if _, err := os.Stat(cfg.StateDir); err != nil {
		return 0, fmt.Errorf("node: state dir: %w", err)
	}
	lock, err := lockStateDir(context.Background(), cfg.StateDir)
	if err != nil {
		return 0, fmt.Errorf("node: %w", err)
	}
	defer lock.Close()
	var keep []int64
	if _, err := os.Stat(keepDir(cfg)); err == nil {
		if cfg.KeepRanks {
			// The agent will start again (systemd's ExecStopPost after a
			// crash or a restart): its kept ranks and their cgroups wait.
			kept, err := rank.ReadKept(keepDir(cfg), cfg.Name)
			if err != nil {
				return 0, fmt.Errorf("node: %w", err)
			}
			keep = liveJobs(kept)
		} else if _, err := rank.KillKept(keepDir(cfg), cfg.Name); err != nil {
			// Kept ranks outlive their agent: without cgroups, only
			// this finds them.
			return 0, fmt.Errorf("node: %w", err)
		}
	}
	t, err := openCgroups(cfg, cfg.Log, keep...)
	if err != nil {
		return 0, fmt.Errorf("node: %w", err)
	}
	n := t.Cleaned()
	if err := t.Close(); err != nil {
		return n, fmt.Errorf("node: cgroups: %w", err)
	}
	return n, nil
}

// jobCgroup creates the cgroup of a job launched here: its memory limit
// is the job's per-process memory times its ranks on this node. Nil (the
// ranks run in the agent's cgroups, process groups only) when cgroups are
// off or the cgroup cannot be made.
func (a *Agent) jobCgroup(l launch) rank.Cgroup {
	var limit int64
	if l.MemoryPerRank > 0 {
		limit = l.MemoryPerRank * int64(len(l.Ranks))
	}
	j, err := a.cg.Create(l.Job, limit)
	if err != nil {
		a.log.Error("job not contained: its cgroup could not be made", zap.Int64("job", l.Job), zap.Error(err))
		return nil
	}
	if j == nil {
		return nil // a nil *jobcg.Job would be a non-nil rank.Cgroup
	}
	return j
}

// killCgroup kills every process of a job's cgroup, including what left
// the ranks' process groups; the cgroup goes with the job's last exit.
func (a *Agent) killCgroup(job int64) {
	if j := a.cg.Job(job); j != nil {
		if err := j.Kill(); err != nil {
			a.log.Error("killing a job's cgroup", zap.Int64("job", job), zap.Error(err))
		}
	}
}

// cgroupExit completes a rank's exit report from its job's cgroup: an
// out-of-memory kill makes it a failure, and the job's last rank here
// removes the cgroup (killing what is left of the job) and carries the
// job's accounting on this node.
func (a *Agent) cgroupExit(m *rankExit, last bool) {
	j := a.cg.Job(m.Job)
	if j == nil {
		return
	}
	var st jobcg.Stats
	var err error
	if last {
		st, _, err = a.cg.Remove(m.Job)
	} else {
		st, err = j.Stats()
	}
	if err != nil {
		a.log.Error("job cgroup", zap.Int64("job", m.Job), zap.Error(err))
	}
	if st.OOMKills > 0 && m.Failure == "" {
		m.Failure = fmt.Sprintf("out of memory: peak %s of the %s limit on %s (%d processes killed by the kernel)",
			humanize.IBytes(uint64(st.PeakMemory)), humanize.IBytes(uint64(st.MemoryLimit)), a.cfg.Name, st.OOMKills)
	}
	if last {
		m.Usage = &nodeUsage{CPUTime: int64(st.CPUTime), PeakMemory: st.PeakMemory, MemoryLimit: st.MemoryLimit,
			Processes: st.Processes, OOMKills: st.OOMKills}
	}
}

// cgroupCollector exposes each local job's cgroup accounting on /metrics,
// read when scraped.
type cgroupCollector struct {
	cg                    *jobcg.Tree
	cpu, peak, procs, oom *prometheus.Desc
}

func newCgroupCollector(cg *jobcg.Tree, nodeName string) *cgroupCollector {
	l := prometheus.Labels{"node": nodeName}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cosched_job_"+name, help, []string{"job"}, l)
	}
	return &cgroupCollector{cg: cg,
		cpu:   d("cpu_seconds_total", "CPU time of every process of the job on this node (its cgroup)."),
		peak:  d("memory_peak_bytes", "Peak memory of the job on this node (its cgroup)."),
		procs: d("processes", "Processes of the job on this node: the most seen at once."),
		oom:   d("oom_kills_total", "Processes of the job the kernel killed for exceeding its memory limit on this node."),
	}
}

func (c *cgroupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cpu
	ch <- c.peak
	ch <- c.procs
	ch <- c.oom
}

func (c *cgroupCollector) Collect(ch chan<- prometheus.Metric) {
	for _, id := range c.cg.Jobs() {
		j := c.cg.Job(id)
		if j == nil {
			continue
		}
		st, err := j.Stats()
		if err != nil {
			continue // removed meanwhile
		}
		job := strconv.FormatInt(id, 10)
		ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, st.CPUTime.Seconds(), job)
		ch <- prometheus.MustNewConstMetric(c.peak, prometheus.GaugeValue, float64(st.PeakMemory), job)
		ch <- prometheus.MustNewConstMetric(c.procs, prometheus.GaugeValue, float64(st.Processes), job)
		ch <- prometheus.MustNewConstMetric(c.oom, prometheus.CounterValue, float64(st.OOMKills), job)
	}
}

// offeredMemory is the memory this agent offers jobs: MemTotal less
// Config.MemReserve; 0 (none advertised) when the reserve is negative,
// MemTotal is unknown, or the reserve takes it all.
func (a *Agent) offeredMemory() int64 {
	if a.cfg.MemReserve < 0 {
		return 0
	}
	total, err := memTotal()
	if err != nil {
		a.log.Warn("memory not advertised: jobs are not admitted by memory here", zap.Error(err))
		return 0
	}
	if total <= a.cfg.MemReserve {
		a.log.Warn("memory not advertised: the reserve is all of it", zap.Int64("mem_total", total), zap.Int64("reserve", a.cfg.MemReserve))
		return 0
	}
	return total - a.cfg.MemReserve
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: MemTotal %q: %w", rest, err)
			}
			return kib << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo: no MemTotal")
}

// cgroupSampleEvery is how often the agent counts its jobs' processes
// (the most seen at once is the job's process count).
const cgroupSampleEvery = 250 * time.Millisecond

// sampleCgroups counts the jobs' processes until ctx ends.
func (a *Agent) sampleCgroups(ctx context.Context) {
	if a.cg.Mode() == jobcg.ModeNone {
		return
	}
	tick := time.NewTicker(cgroupSampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			a.cg.Sample()
		}
	}
}
