package jobcg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// v1Used are the legacy controllers a job's cgroup joins: the freezer
// (required: suspension and race-free kills), memory (the limit, OOM and
// peak), pids (the process count), cpuacct (CPU time) and cpu (the jobs'
// weight against the agent, only when it is set: Config.CPUWeight).
var v1Used = []cgroup1.Name{cgroup1.Freezer, cgroup1.Memory, cgroup1.Pids, cgroup1.Cpuacct, cgroup1.Cpu}

// v1Backend keeps jobs in <own cgroup>/<sub>/job-N of each used hierarchy.
type v1Backend struct {
	subsystems []cgroup1.Subsystem
	own        cgroup1.Path // the agent's own cgroups (where the spawner thread returns)
	base       cgroup1.Path // the agent's subtree
	freezerDir string       // the subtree's directory in the freezer hierarchy
	memory     bool
	cpu        cgroup1.Subsystem // nil when the cpu controller is not mounted
}

// openV1 opens the subtree in the legacy hierarchies; jobs join the cpu
// hierarchy only with weighCPU (their weight is to be set).
func openV1(sub string, weighCPU bool) (*v1Backend, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, fmt.Errorf("legacy hierarchies: %w", err)
	}
	b := &v1Backend{}
	for _, s := range all {
		for _, n := range v1Used {
			if s.Name() == n && (n != cgroup1.Cpu || weighCPU) {
				b.subsystems = append(b.subsystems, s)
			}
		}
	}
	own := agentV1(cgroup1.NestedPath(""))
	if _, err := own(cgroup1.Freezer); err != nil {
		return nil, fmt.Errorf("own freezer cgroup: %w", err)
	}
	b.own = own
	b.base = func(n cgroup1.Name) (string, error) {
		p, err := own(n)
		return filepath.Join(p, sub), err
	}
	var fz cgroup1.Subsystem
	for _, s := range b.subsystems {
		switch s.Name() {
		case cgroup1.Freezer:
			fz = s
		case cgroup1.Memory:
			b.memory = true
		case cgroup1.Cpu:
			b.cpu = s
		}
	}
	if fz == nil {
		return nil, errors.New("the freezer controller is not mounted")
	}
	if _, err := cgroup1.New(b.base, &specs.LinuxResources{}, cgroup1.WithHierarchy(b.hierarchy)); err != nil {
		return nil, fmt.Errorf("creating the subtree %s: %w", sub, err)
	}
	p, _ := b.base(cgroup1.Freezer)
	b.freezerDir = fz.(interface{ Path(string) string }).Path(p)
	return b, nil
}

// agentV1 is own as agentCgroup reads it: a guard's paths are its agent's.
func agentV1(own cgroup1.Path) cgroup1.Path {
	return func(n cgroup1.Name) (string, error) {
		p, err := own(n)
		a, _ := agentCgroup(p)
		return a, err
	}
}

// weighJobs sets cpu.shares on <own>/cosched in the cpu hierarchy: the
// level where the agent's threads (in <own>) and the jobs meet, so the
// jobs of every agent on the host weigh as one low-weight task against
// each agent thread (1024 at nice 0, more at the agent's negative nice).
func (b *v1Backend) weighJobs(weight int) (string, error) {
	if b.cpu == nil {
		return "", errors.New("the cpu controller is not mounted")
	}
	own, err := b.own(cgroup1.Cpu)
	if err != nil {
		return "", fmt.Errorf("own cpu cgroup: %w", err)
	}
	dir := filepath.Join(b.cpu.(interface{ Path(string) string }).Path(own), "cosched")
	shares := max(2, weight*1024/100)
	if err := os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(strconv.Itoa(shares)), 0); err != nil {
		return "", fmt.Errorf("the jobs' cpu.shares: %w", err)
	}
	return fmt.Sprintf("cpu.shares %d on %s", shares, dir), nil
}

func (b *v1Backend) hierarchy() ([]cgroup1.Subsystem, error) { return b.subsystems, nil }

func (b *v1Backend) path(name string) cgroup1.Path {
	return func(n cgroup1.Name) (string, error) {
		p, err := b.base(n)
		return filepath.Join(p, name), err
	}
}

func (b *v1Backend) create(name string, memLimit int64) (group, error) {
	res := &specs.LinuxResources{}
	if memLimit > 0 && b.memory {
		// Swap counts too (memsw, when the kernel accounts it): a job
		// must not page its way past its limit.
		swap := memLimit
		res.Memory = &specs.LinuxMemory{Limit: &memLimit, Swap: &swap}
	}
	cg, err := cgroup1.New(b.path(name), res, cgroup1.WithHierarchy(b.hierarchy))
	if err != nil && res.Memory != nil && res.Memory.Swap != nil {
		res.Memory.Swap = nil // no swap accounting on this kernel
		cg, err = cgroup1.New(b.path(name), res, cgroup1.WithHierarchy(b.hierarchy))
	}
	if err != nil {
		return nil, err
	}
	return b.group(name, cg, memLimit)
}

func (b *v1Backend) group(name string, cg cgroup1.Cgroup, memLimit int64) (*v1Group, error) {
	own, err := cgroup1.Load(b.own, cgroup1.WithHierarchy(b.hierarchy))
	if err != nil {
		return nil, fmt.Errorf("the agent's own cgroups: %w", err)
	}
	return &v1Group{cg: cg, own: own, freezerState: filepath.Join(b.freezerDir, name, "freezer.state"), memLimit: memLimit}, nil
}

func (b *v1Backend) leftovers() ([]string, error) { return jobDirs(b.freezerDir) }

func (b *v1Backend) load(name string) (group, error) {
	cg, err := cgroup1.Load(b.path(name), cgroup1.WithHierarchy(b.hierarchy))
	if err != nil {
		return nil, err
	}
	return b.group(name, cg, 0)
}

func (b *v1Backend) removeSubtree() error {
	cg, err := cgroup1.Load(b.base, cgroup1.WithHierarchy(b.hierarchy))
	if err != nil {
		if errors.Is(err, cgroup1.ErrCgroupDeleted) {
			return nil
		}
		return err
	}
	if err := cg.Delete(); err != nil {
		return err
	}
	for _, s := range b.subsystems {
		if p, err := b.base(s.Name()); err == nil {
			removeIfEmpty(filepath.Dir(s.(interface{ Path(string) string }).Path(p)))
		}
	}
	return nil
}

type v1Group struct {
	cg           cgroup1.Cgroup
	own          cgroup1.Cgroup
	freezerState string
	memLimit     int64
	frozenKills  int // kills that had to freeze the group (frozenKill)
}

// enter moves the forking thread into every used hierarchy's job cgroup
// (the tasks file moves one thread); leave moves it back.
func (g *v1Group) enter(tid int) (int, func() error, error) {
	p := cgroup1.Process{Pid: tid}
	if err := g.cg.AddTask(p); err != nil {
		_ = g.own.AddTask(p) // partly moved: undo what moved
		return -1, nil, fmt.Errorf("moving the spawner thread in: %w", err)
	}
	return -1, func() error { return g.own.AddTask(p) }, nil
}

func (g *v1Group) setFrozen(frozen bool) error {
	state := "THAWED"
	if frozen {
		state = "FROZEN"
	}
	return os.WriteFile(g.freezerState, []byte(state), 0)
}

// kill SIGKILLs every process in the group. It freezes the group only
// for processes that keep appearing (forked while the list was read), and
// only after killRounds rounds of kills without it: in v1 a frozen task
// receives a fatal signal only when it is thawed, so an agent that dies
// between a freeze and its thaw (Slurm's SIGKILL KillWait after the
// SIGTERM of a time limit, while the agent kills its jobs) leaves the
// job's processes frozen for ever, orphaned. A CI run saw one, a rank
// with its SIGKILL pending in a FROZEN group. Round by round, a process
// already sent SIGKILL is exiting (or in uninterruptible sleep, to die
// when it wakes); only new pids are killed, and a round with none ends
// the kill (the caller waits for the group to empty). A group frozen
// already (a job suspended by --suspend freezer) gets frozenKill, which
// ends with the thaw that delivers its kills.
func (g *v1Group) kill() error {
	st, err := os.ReadFile(g.freezerState)
	if err != nil {
		return fmt.Errorf("freezer state: %w", err)
	}
	if strings.TrimSpace(string(st)) != "THAWED" {
		return g.frozenKill()
	}
	killed := make(map[int]bool)
	for range killRounds {
		procs, err := g.cg.Processes(cgroup1.Freezer, true)
		if err != nil {
			return err
		}
		fresh := 0
		var errs []error
		for _, p := range procs {
			if killed[p.Pid] {
				continue
			}
			killed[p.Pid] = true
			fresh++
			if err := unix.Kill(p.Pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d: %w", p.Pid, err))
			}
		}
		if err := errors.Join(errs...); err != nil || fresh == 0 {
			return err
		}
	}
	return g.frozenKill()
}

// killRounds is how many rounds of kills kill makes before it freezes the
// group: a process tree that is not forking all the time is gone in two.
const killRounds = 4

// frozenKill freezes the group (waiting until every task is frozen, so
// none can fork while the list is read), SIGKILLs every process and thaws
// it (the kill is delivered on thaw). The wait is bounded: a task in
// uninterruptible sleep (a hung NFS read) cannot freeze, and the kill must
// not hang the agent; such a task is killed unfrozen (it cannot fork
// either while it sleeps), and Remove's loop kills anything else.
func (g *v1Group) frozenKill() error {
	g.frozenKills++
	if err := g.setFrozen(true); err != nil {
		return fmt.Errorf("freeze: %w", err)
	}
	deadline := time.Now().Add(freezeTimeout)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		st, err := os.ReadFile(g.freezerState)
		if err != nil {
			return fmt.Errorf("freezer state: %w", err)
		}
		if strings.TrimSpace(string(st)) == "FROZEN" || time.Now().After(deadline) {
			break
		}
		time.Sleep(delay)
	}
	procs, err := g.cg.Processes(cgroup1.Freezer, true)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range procs {
		if err := unix.Kill(p.Pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", p.Pid, err))
		}
	}
	if err := g.setFrozen(false); err != nil {
		errs = append(errs, fmt.Errorf("thaw: %w", err))
	}
	return errors.Join(errs...)
}

// freezeTimeout bounds how long a kill waits for the freeze.
const freezeTimeout = 2 * time.Second

func (g *v1Group) procs() ([]int, error) {
	ps, err := g.cg.Processes(cgroup1.Freezer, true)
	if err != nil {
		return nil, err
	}
	pids := make([]int, len(ps))
	for i, p := range ps {
		pids[i] = p.Pid
	}
	return pids, nil
}

func (g *v1Group) stats() (Stats, error) {
	m, err := g.cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	if m.CPU != nil && m.CPU.Usage != nil {
		st.CPUTime = time.Duration(m.CPU.Usage.Total)
	}
	if m.Memory != nil && m.Memory.Usage != nil {
		st.PeakMemory = int64(m.Memory.Usage.Max)
		st.Memory = int64(m.Memory.Usage.Usage)
		if g.memLimit > 0 {
			st.MemoryLimit = g.memLimit
		} else if l := m.Memory.Usage.Limit; l < 1<<62 {
			st.MemoryLimit = int64(l)
		}
	}
	if m.MemoryOomControl != nil {
		st.OOMKills = m.MemoryOomControl.OomKill
	}
	if m.Pids != nil {
		st.Processes = int(m.Pids.Current)
	} else if ps, err := g.procs(); err == nil {
		st.Processes = len(ps)
	}
	return st, nil
}

func (g *v1Group) remove() error { return g.cg.Delete() }
