package jobcg

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/cgroups/v3"
	"go.uber.org/zap"
)

// Mode is how an agent contains its jobs.
type Mode string

// Modes. ModeNone is the fallback: ranks are contained by their process
// groups only (setsid escapes, memory is not enforced).
const (
	ModeNone Mode = "none"
	ModeV1   Mode = "v1"
	ModeV2   Mode = "v2"
)

// Config configures Open.
type Config struct {
	// Agent names the subtree, cosched/<Agent>: unique per agent on a
	// host, so two agents (a loopback cluster) never touch each other's
	// jobs, and stable across restarts, so an agent finds what its
	// previous life left. Letters, digits, '.', '_' and '-'.
	Agent string
	// Mode is "auto" or "" (v2 on a unified host, v1 on a legacy or
	// hybrid one, none when neither works), "v1", "v2" (on a hybrid host:
	// the unified mount, which has no controllers there: containment,
	// freezing and killing, but no memory limit or accounting) or "none".
	// An explicit v1 or v2 that cannot be used is an error.
	Mode string
	// Root is the hierarchies' mount point; "" means /sys/fs/cgroup.
	Root string
	// CPUWeight is the CPU weight of the parent of every agent's jobs on
	// the host (<own cgroup>/cosched), on cgroup v2's scale (1–10000, the
	// kernel's default 100; on v1 cpu.shares = weight × 1024 / 100, at
	// least 2). The agent stays in its own cgroup at the default weight:
	// with 10, all the jobs together get at most 10/110 of a processor
	// the agent also wants, and all of it while the agent is idle (a
	// weight only divides contended time), so the agent, its gossip and
	// its API run when woken even when the ranks want every processor.
	// 0 means DefaultCPUWeight. A negative value weighs nothing: the
	// jobs stay in the agent's cpu cgroup on v1, and on v2 the parent
	// keeps the kernel's default weight (100). An agent at real-time
	// priority should pass -1 (node does): see docs/cgroups.md.
	CPUWeight int
	Log       *zap.Logger
	// Keep lists jobs whose cgroups a previous life left and this one
	// adopts (their ranks outlived it) instead of killing them.
	Keep []int64
}

// DefaultCPUWeight is the jobs' parent's CPU weight when Config.CPUWeight is
// 0: a tenth of the agent's (the kernel's default 100), like Slurm's core
// specialisation or a systemd slice with CPUWeight=10 for the work.
const DefaultCPUWeight = 10

// Stats is a job's accounting on this node, read from its cgroup.
type Stats struct {
	CPUTime     time.Duration // user + system of every process the job ran here
	PeakMemory  int64         // bytes; 0 when the memory controller is absent
	Memory      int64         // bytes in use now (memory.current, v1 memory.usage_in_bytes)
	MemoryLimit int64         // bytes; 0 means none
	// Processes is the most processes seen at once, sampled at every
	// Sample, Stats, Pids, Kill and Remove (v1 has no peak counter).
	Processes int
	OOMKills  uint64 // processes the kernel killed for exceeding the limit
}

// backend is one cgroup hierarchy's implementation.
type backend interface {
	create(name string, memLimit int64) (group, error)
	// weighJobs sets the CPU weight (v2 scale) of the parent of every
	// agent's job subtree and says what it wrote where.
	weighJobs(weight int) (string, error)
	// leftovers lists the job groups in the subtree (a previous life's).
	leftovers() ([]string, error)
	load(name string) (group, error)
	removeSubtree() error
}

// group is one job's cgroup.
type group interface {
	enter(tid int) (fd int, leave func() error, err error)
	setFrozen(frozen bool) error
	kill() error
	procs() ([]int, error)
	stats() (Stats, error)
	remove() error
}

// Tree is an agent's cgroup subtree and the job cgroups in it.
type Tree struct {
	mode   Mode
	reason string
	b      backend
	log    *zap.Logger

	cleaned int // job cgroups of a previous life killed and removed by Open
	// cpu says how the jobs are weighed against the agent ("cpu.shares 102
	// on …"), or why they are not ("not weighed: …").
	cpu string

	mu       sync.Mutex
	jobs     map[int64]*Job
	closed   bool           // Close began: Create makes nothing more
	removing sync.WaitGroup // Removes in progress (Close waits for them)
}

var agentName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Open detects the hierarchy, creates the agent's subtree and kills and
// removes the job cgroups a previous life of this agent left. In auto mode
// a host where cgroups cannot be used gives a Tree in ModeNone (logged,
// with Reason) rather than an error.
func Open(cfg Config) (*Tree, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if err := checkAgent(cfg.Agent); err != nil {
		return nil, fmt.Errorf("jobcg: %w", err)
	}
	if cfg.CPUWeight > 10000 {
		return nil, fmt.Errorf("jobcg: CPU weight %d: want 1 to 10000 (0: the default, negative: the kernel's)", cfg.CPUWeight)
	}
	t := &Tree{log: cfg.Log, jobs: map[int64]*Job{}}
	sub := "cosched/" + cfg.Agent
	auto := cfg.Mode == "" || cfg.Mode == "auto"
	mode, mount, err := hierarchy(cfg)
	switch {
	case err != nil && !auto:
		return nil, fmt.Errorf("jobcg: %w", err)
	case err == nil && mode == ModeNone:
		t.mode, t.reason = ModeNone, "turned off (--cgroups none)"
		t.log.Info("jobs are not contained by cgroups: turned off")
		return t, nil
	case err == nil && mode == ModeV2:
		t.mode = ModeV2
		t.b, err = openV2(mount, sub)
	case err == nil:
		t.mode = ModeV1
		t.b, err = openV1(sub, cfg.CPUWeight >= 0)
	}
	if err != nil && auto {
		t.mode, t.reason, t.b = ModeNone, err.Error(), nil
		t.log.Warn("jobs are not contained by cgroups: process groups only (children that setsid escape, memory is not enforced)",
			zap.String("reason", t.reason))
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobcg: %s: %w", cfg.Mode, err)
	}
	switch w := cfg.CPUWeight; {
	case w < 0:
		t.cpu = "not weighed: turned off"
	default:
		if w == 0 {
			w = DefaultCPUWeight
		}
		if t.cpu, err = t.b.weighJobs(w); err != nil {
			// Containment still works; the agent only loses its
			// protection against its own ranks (nice and SCHED_RR are
			// left).
			t.cpu = "not weighed: " + err.Error()
			t.log.Warn("the jobs' CPU weight is not lowered: busy ranks compete with the agent on equal terms (its nice value and real-time policy are what is left)", zap.Error(err))
		}
	}
	n, err := t.cleanLeftovers(cfg.Keep)
	t.cleaned = n
	removeStaleGuard(cfg)
	if err != nil {
		t.log.Error("cleaning the previous life's job cgroups", zap.Error(err))
	} else if n > 0 {
		t.log.Warn("killed and removed job cgroups a previous life of this agent left", zap.Int("jobs", n))
	}
	t.log.Info("jobs contained by cgroups", zap.String("mode", string(t.mode)), zap.String("subtree", sub), zap.String("cpu", t.cpu))
	if v2, ok := t.b.(*v2Backend); ok && v2.limited != "" {
		t.log.Warn("cgroup v2 without controllers for jobs: contained, frozen and killed, but --mem is not enforced and memory not accounted (see docs/cgroups.md: Delegate=yes)",
			zap.String("reason", v2.limited))
	}
	return t, nil
}

// checkAgent refuses an agent name that is not one path component.
func checkAgent(name string) error {
	if !agentName.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("agent name %q: want letters, digits, '.', '_' or '-'", name)
	}
	return nil
}

// hierarchy is the hierarchy cfg.Mode names on this host: ModeV1, ModeV2
// with its mount point, or ModeNone ("none"). "auto" on a host with
// neither mounted, and an unknown mode, are errors.
func hierarchy(cfg Config) (Mode, string, error) {
	root := cmp.Or(cfg.Root, "/sys/fs/cgroup")
	switch cfg.Mode {
	case "", "auto":
		switch cgroups.Mode() {
		case cgroups.Unified:
			return ModeV2, root, nil
		case cgroups.Legacy, cgroups.Hybrid:
			return ModeV1, "", nil
		}
		return ModeNone, "", errors.New("no cgroup hierarchy mounted at " + root)
	case "v1":
		return ModeV1, "", nil
	case "v2":
		if cgroups.Mode() == cgroups.Hybrid {
			return ModeV2, root + "/unified", nil // the unified mount beside the legacy ones
		}
		return ModeV2, root, nil
	case "none":
		return ModeNone, "", nil
	}
	return "", "", fmt.Errorf("mode %q: want auto, v1, v2 or none", cfg.Mode)
}

// Cleaned is how many job cgroups of a previous life of the agent Open
// killed and removed.
func (t *Tree) Cleaned() int { return t.cleaned }

// Usable says why jobs cannot be contained by cgroups on this host (""
// when they can): it opens and closes a subtree named probe, in auto
// mode, as an agent would. Tests that need cgroups skip with the reason.
func Usable(probe string) string {
	t, err := Open(Config{Agent: probe})
	if err != nil {
		return err.Error()
	}
	defer t.Close()
	if t.Mode() == ModeNone {
		return t.Reason()
	}
	return ""
}

// CPU says how the jobs are weighed against the agent for CPU time
// ("cpu.weight 10 on /sys/fs/cgroup/…/cosched"), or why they are not
// ("not weighed: …"); "" in ModeNone.
func (t *Tree) CPU() string { return t.cpu }

// Mode says how jobs are contained.
func (t *Tree) Mode() Mode { return t.mode }

// Reason says why the mode is ModeNone ("" otherwise).
func (t *Tree) Reason() string { return t.reason }

// Status is the mode for `nodes --stats`: "v1", "v2", or "none (reason)".
func (t *Tree) Status() string {
	if t.mode == ModeNone {
		return "none (" + t.reason + ")"
	}
	return string(t.mode)
}

func jobName(id int64) string { return "job-" + strconv.FormatInt(id, 10) }

func (t *Tree) cleanLeftovers(keep []int64) (int, error) {
	names, err := t.b.leftovers()
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, name := range names {
		g, err := t.b.load(name)
		if id, ok := keptJob(name, keep); ok && err == nil {
			// Adopted as it is; thawed, so that its state is known
			// (Job.frozen false): the kept ranks stopped themselves.
			if err := g.setFrozen(false); err != nil {
				errs = append(errs, fmt.Errorf("%s: thaw: %w", name, err))
			}
			t.jobs[id] = &Job{id: id, g: g}
			continue
		}
		n++
		if err == nil {
			err = killAndRemove(g)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return n, errors.Join(errs...)
}

// keptJob reports whether a leftover job group is one of keep's.
func keptJob(name string, keep []int64) (int64, bool) {
	for _, id := range keep {
		if name == jobName(id) {
			return id, true
		}
	}
	return 0, false
}

// Create makes job's cgroup with a memory limit (0: none). In ModeNone it
// returns nil, nil. Creating a job that exists returns the existing one.
func (t *Tree) Create(id int64, memLimit int64) (*Job, error) {
	if t.mode == ModeNone {
		return nil, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		// A launch racing its agent's stop: a cgroup made now, after
		// Close removed the subtree, would be left for ever.
		return nil, fmt.Errorf("jobcg: job %d: %w", id, ErrClosed)
	}
	if j := t.jobs[id]; j != nil {
		return j, nil
	}
	g, err := t.b.create(jobName(id), memLimit)
	if err != nil {
		return nil, fmt.Errorf("jobcg: job %d: %w", id, err)
	}
	j := &Job{id: id, g: g}
	t.jobs[id] = j
	return j, nil
}

// Job returns job's cgroup, or nil.
func (t *Tree) Job(id int64) *Job {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.jobs[id]
}

// Jobs lists the jobs with a cgroup, sorted.
func (t *Tree) Jobs() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]int64, 0, len(t.jobs))
	for id := range t.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Sample counts every job's processes now (Stats.Processes is the most
// seen at once). The agent calls it periodically.
func (t *Tree) Sample() {
	if t.mode == ModeNone {
		return
	}
	for _, id := range t.Jobs() {
		if j := t.Job(id); j != nil {
			_, _ = j.Pids() // a job removed meanwhile: nothing to count
		}
	}
}

// Remove kills whatever is left in job's cgroup, reads its final
// accounting and removes it. ok is false when the job has no cgroup.
func (t *Tree) Remove(id int64) (st Stats, ok bool, err error) {
	t.mu.Lock()
	j := t.jobs[id]
	delete(t.jobs, id)
	if j != nil {
		t.removing.Add(1)
	}
	t.mu.Unlock()
	if j == nil {
		return Stats{}, false, nil
	}
	defer t.removing.Done()
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.statsLocked() // a last sample of the processes
	if err := j.g.kill(); err != nil {
		return Stats{}, true, fmt.Errorf("jobcg: job %d: kill: %w", id, err)
	}
	st, _ = j.statsLocked() // after the kill: nothing runs on
	if err := waitEmptyAndRemove(j.g); err != nil {
		return st, true, fmt.Errorf("jobcg: job %d: %w", id, err)
	}
	return st, true, nil
}

// Close kills and removes every job's cgroup and the agent's subtree;
// Create fails from then on (ErrClosed). Idempotent.
func (t *Tree) Close() error {
	if t.mode == ModeNone {
		return nil
	}
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	var errs []error
	for _, id := range t.Jobs() {
		if _, _, err := t.Remove(id); err != nil {
			errs = append(errs, err)
		}
	}
	// A Remove from another goroutine (a job's last rank exiting) may be
	// under way; then anything that still failed to go, as at start.
	t.removing.Wait()
	if _, err := t.cleanLeftovers(nil); err != nil {
		errs = append(errs, err)
	}
	if err := t.b.removeSubtree(); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("jobcg: removing the subtree: %w", err))
	}
	return errors.Join(errs...)
}

func killAndRemove(g group) error {
	if err := g.kill(); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	return waitEmptyAndRemove(g)
}

// emptyTimeout bounds the wait for killed processes to leave the cgroup
// (SIGKILL is delivered at once; exiting takes the kernel a moment, longer
// for a large address space).
const emptyTimeout = 10 * time.Second

func waitEmptyAndRemove(g group) error {
	deadline := time.Now().Add(emptyTimeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		pids, err := g.procs()
		if err != nil {
			return fmt.Errorf("listing processes: %w", err)
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in the cgroup %v after the kill", pids, emptyTimeout)
		}
		if err := g.kill(); err != nil { // one forked while we looked? (frozen: cannot)
			return fmt.Errorf("kill: %w", err)
		}
		time.Sleep(delay)
	}
	// rmdir can still find the cgroup busy for a moment after the last
	// process left it (v1 controllers detach asynchronously): retry.
	for {
		err := g.remove()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Job is one job's cgroup on this node.
type Job struct {
	id int64
	g  group

	mu       sync.Mutex // held across a fork into the cgroup; guards frozen, maxProcs
	frozen   bool
	maxProcs int
}

// Enter implements rank.Cgroup: it runs on the rank manager's spawner
// thread (tid) just before it forks a rank and returns the cgroup's
// directory descriptor for clone3(CLONE_INTO_CGROUP) (v2), or -1 after
// moving the thread itself into the job's cgroups (v1). leave must be
// called right after the fork: it moves the thread back (v1) or closes the
// descriptor (v2). A frozen job's cgroup is thawed from Enter to leave (a
// thread or child born into a frozen cgroup would freeze before the exec
// the spawner waits for); the job's own ranks are stopped or not yet
// continued at that moment in every mode but a row switch racing with a
// launch. Freeze and Thaw wait for leave.
func (j *Job) Enter(tid int) (int, func() error, error) {
	j.mu.Lock()
	if j.frozen {
		if err := j.g.setFrozen(false); err != nil {
			j.mu.Unlock()
			return -1, nil, fmt.Errorf("jobcg: job %d: thaw for a fork: %w", j.id, err)
		}
	}
	fd, leave, err := j.g.enter(tid)
	if err != nil {
		j.refreezeLocked()
		j.mu.Unlock()
		return -1, nil, fmt.Errorf("jobcg: job %d: %w", j.id, err)
	}
	return fd, func() error {
		defer j.mu.Unlock()
		err := leave()
		j.refreezeLocked()
		if err != nil {
			return fmt.Errorf("jobcg: job %d: leave: %w", j.id, err)
		}
		return nil
	}, nil
}

func (j *Job) refreezeLocked() {
	if j.frozen {
		_ = j.g.setFrozen(true) // best effort: the next switch writes it again
	}
}

// Freeze suspends every process of the job (one write; it does not wait
// for the freeze to complete, see the package doc).
func (j *Job) Freeze() error { return j.setFrozen(true) }

// Thaw resumes the job's processes.
func (j *Job) Thaw() error { return j.setFrozen(false) }

func (j *Job) setFrozen(f bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.frozen = f
	if err := j.g.setFrozen(f); err != nil {
		return fmt.Errorf("jobcg: job %d: freeze=%v: %w", j.id, f, err)
	}
	return nil
}

// Kill SIGKILLs every process in the job's cgroup (frozen first, so none
// can fork away). The cgroup stays until Remove.
func (j *Job) Kill() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.statsLocked() // a last sample of the processes
	if err := j.g.kill(); err != nil {
		return fmt.Errorf("jobcg: job %d: kill: %w", j.id, err)
	}
	return nil
}

// Pids lists the processes in the job's cgroup.
func (j *Job) Pids() ([]int, error) {
	pids, err := j.g.procs()
	j.mu.Lock()
	j.maxProcs = max(j.maxProcs, len(pids))
	j.mu.Unlock()
	return pids, err
}

// Stats reads the job's accounting so far.
func (j *Job) Stats() (Stats, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.statsLocked()
}

func (j *Job) statsLocked() (Stats, error) {
	st, err := j.g.stats()
	if err != nil {
		return st, fmt.Errorf("jobcg: job %d: stats: %w", j.id, err)
	}
	j.maxProcs = max(j.maxProcs, st.Processes)
	st.Processes = j.maxProcs
	return st, nil
}

// ownCgroupV2 reads the calling process's cgroup v2 path from /proc/self/cgroup.
func ownCgroupV2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// jobDirs lists the job cgroups (job-N) directly under dir: what a
// previous life of the agent may have left.
func jobDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "job-") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// ErrClosed is Create's error once the tree is closed.
var ErrClosed = errors.New("the agent's cgroups are closed")
