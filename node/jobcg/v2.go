package jobcg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// v2Backend keeps jobs in <own cgroup>/<sub>/job-N of the unified
// hierarchy mounted at mount.
type v2Backend struct {
	mount string
	base  *cgroup2.Manager
	dir   string   // the subtree's directory
	ctrls []string // controllers enabled for jobs (memory, pids, cpu when available)
	// limited says why jobs get no controllers ("" when they do).
	limited string
}

func openV2(mount, sub string) (*v2Backend, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil, fmt.Errorf("no cgroup2 hierarchy at %s", mount)
	}
	raw, err := ownCgroupV2()
	if err != nil {
		return nil, err
	}
	own, guard := agentCgroup(raw)
	if !guard { // a guard stays where it is, out of its agent's cgroup
		if err := leaveInternal(mount, own); err != nil {
			return nil, err
		}
	}
	group := filepath.Join(own, sub)
	base, err := cgroup2.NewManager(mount, group, &cgroup2.Resources{})
	if err != nil {
		return nil, fmt.Errorf("creating the subtree %s: %w", group, err)
	}
	b := &v2Backend{mount: mount, base: base, dir: filepath.Join(mount, group)}
	avail, err := base.RootControllers()
	if err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if slices.Contains(avail, c) {
			b.ctrls = append(b.ctrls, c)
		}
	}
	// Enable them down to the subtree's children. This fails where the
	// agent shares a non-root cgroup with its own process (the "no
	// internal processes" rule): then jobs get containment, freezing and
	// killing but no memory limit (see docs/cgroups.md: Delegate=yes).
	if len(b.ctrls) > 0 {
		if err := b.enable(); err != nil {
			b.limited = err.Error()
			b.ctrls = nil
		}
	} else {
		b.limited = "no memory, pids or cpu controller available to this cgroup"
	}
	return b, nil
}

func (b *v2Backend) enable() error {
	if err := b.base.ToggleControllers(b.ctrls, cgroup2.Enable); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.dir, "cgroup.subtree_control"), []byte("+"+strings.Join(b.ctrls, " +")), 0)
}

// weighJobs sets cpu.weight on <own>/cosched, the parent of every agent's
// subtree, which is where the jobs meet the agent: its sibling leaf
// <own>/cosched-agent (weight 100), or the agent's own threads when it
// runs in the root cgroup.
func (b *v2Backend) weighJobs(weight int) (string, error) {
	if !slices.Contains(b.ctrls, "cpu") {
		why := b.limited
		if why == "" {
			why = "no cpu controller available to this cgroup"
		}
		return "", errors.New(why)
	}
	dir := filepath.Dir(b.dir)
	if err := os.WriteFile(filepath.Join(dir, "cpu.weight"), []byte(strconv.Itoa(weight)), 0); err != nil {
		return "", fmt.Errorf("the jobs' cpu.weight: %w", err)
	}
	return fmt.Sprintf("cpu.weight %d on %s", weight, dir), nil
}

func (b *v2Backend) create(name string, memLimit int64) (group, error) {
	res := &cgroup2.Resources{}
	if memLimit > 0 && slices.Contains(b.ctrls, "memory") {
		var noSwap int64
		res.Memory = &cgroup2.Memory{Max: &memLimit, Swap: &noSwap}
	}
	m, err := b.base.NewChild(name, res)
	if err != nil && res.Memory != nil {
		res.Memory.Swap = nil // no swap controller files
		m, err = b.base.NewChild(name, res)
	}
	if err != nil {
		return nil, err
	}
	if res.Memory == nil {
		memLimit = 0 // not enforced
	}
	return b.group(name, m, memLimit)
}

func (b *v2Backend) group(name string, m *cgroup2.Manager, memLimit int64) (*v2Group, error) {
	return &v2Group{m: m, dir: filepath.Join(b.dir, name), memLimit: memLimit}, nil
}

func (b *v2Backend) leftovers() ([]string, error) { return jobDirs(b.dir) }

func (b *v2Backend) load(name string) (group, error) {
	m, err := cgroup2.Load(strings.TrimPrefix(filepath.Join(b.dir, name), b.mount), cgroup2.WithMountpoint(b.mount))
	if err != nil {
		return nil, err
	}
	return b.group(name, m, 0)
}

func (b *v2Backend) removeSubtree() error {
	if err := b.base.Delete(); err != nil {
		return err
	}
	removeIfEmpty(filepath.Dir(b.dir))
	return nil
}

type v2Group struct {
	m        *cgroup2.Manager
	dir      string
	memLimit int64
}

// enter opens the cgroup's directory for clone3(CLONE_INTO_CGROUP): the
// child is created inside it, the forking thread never moves.
func (g *v2Group) enter(int) (int, func() error, error) {
	fd, err := unix.Open(g.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("opening %s: %w", g.dir, err)
	}
	return fd, func() error { return unix.Close(fd) }, nil
}

func (g *v2Group) setFrozen(frozen bool) error {
	v := "0"
	if frozen {
		v = "1"
	}
	return os.WriteFile(filepath.Join(g.dir, "cgroup.freeze"), []byte(v), 0)
}

// kill writes cgroup.kill (Linux 5.14+), which kills every process in the
// subtree atomically; older kernels fall back to freeze, kill, thaw.
func (g *v2Group) kill() error {
	err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	if err == nil || errors.Is(err, os.ErrNotExist) && g.m.Kill() == nil {
		return nil
	}
	return err
}

func (g *v2Group) procs() ([]int, error) {
	ps, err := g.m.Procs(true)
	if err != nil {
		return nil, err
	}
	pids := make([]int, len(ps))
	for i, p := range ps {
		pids[i] = int(p)
	}
	return pids, nil
}

func (g *v2Group) stats() (Stats, error) {
	m, err := g.m.Stat()
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	if m.CPU != nil {
		st.CPUTime = time.Duration(m.CPU.UsageUsec) * time.Microsecond
	}
	if m.Memory != nil {
		st.PeakMemory = int64(m.Memory.MaxUsage)
		st.Memory = int64(m.Memory.Usage)
	}
	st.MemoryLimit = g.memLimit
	if m.MemoryEvents != nil {
		st.OOMKills = m.MemoryEvents.OomKill
	}
	if m.Pids != nil && m.Pids.Current > 0 {
		st.Processes = int(m.Pids.Current)
	} else if ps, err := g.procs(); err == nil {
		st.Processes = len(ps)
	}
	return st, nil
}

func (g *v2Group) remove() error { return g.m.Delete() }

// agentLeaf is the leaf cgroup an agent moves into on v2 (leaveInternal).
const agentLeaf = "cosched-agent"

// leaveInternal moves the agent out of its own cgroup into a leaf,
// <own>/cosched-agent, when it shares it (the systemd unit's cgroup with
// Delegate=yes): cgroup v2 lets a cgroup with processes enable no
// controller for its children (the "no internal processes" rule). The root
// cgroup is exempt.
func leaveInternal(mount, own string) error {
	if own == "/" {
		return nil
	}
	dir := filepath.Join(mount, own)
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return nil // nothing to move (or nothing we can read: enable will say)
	}
	leaf := filepath.Join(dir, agentLeaf)
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		return fmt.Errorf("the agent's leaf cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("moving the agent into %s: %w", leaf, err)
	}
	return nil
}
