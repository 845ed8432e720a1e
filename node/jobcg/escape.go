package jobcg

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/cgroups/v3/cgroup1"
)

// GuardSuffix names the cgroup Escape moves a process into: beside the
// agent's subtree, <own cgroup>/cosched/<agent><GuardSuffix>.
const GuardSuffix = ".guard"

// Escape moves the calling process (all its threads) out of its own
// cgroup into <own cgroup>/cosched/<cfg.Agent>.guard, in every hierarchy
// jobs use (cfg.Mode and cfg.Root as Open reads them), and returns a
// function that moves it back and removes that cgroup. The agent's cleanup
// guard calls it: a batch system that ends a step by killing the members of
// the step's cgroup (Slurm's proctrack/cgroup, which kills a SIGKILLed
// agent's guard with it) does not reach into the cgroups below, where the
// jobs are too. It does not touch the agent's subtree or its jobs. With
// cfg.Mode "none" it moves nothing.
func Escape(cfg Config) (back func() error, err error) {
	homes, dirs, err := guardDirs(cfg)
	if err != nil {
		return nil, fmt.Errorf("jobcg: %w", err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	var made []string
	back = func() error {
		var errs []error
		for i, dir := range made {
			if err := os.WriteFile(filepath.Join(homes[i], "cgroup.procs"), pid, 0); err != nil {
				errs = append(errs, fmt.Errorf("back to %s: %w", homes[i], err))
				continue
			}
			// Busy: another life's guard is in it (it removes it).
			if err := os.Remove(dir); err != nil && !errors.Is(err, syscall.EBUSY) {
				errs = append(errs, err)
			}
			removeIfEmpty(filepath.Dir(dir))
		}
		return errors.Join(errs...)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, errors.Join(fmt.Errorf("jobcg: %w", err), back())
		}
		made = append(made, dir)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0); err != nil {
			return nil, errors.Join(fmt.Errorf("jobcg: moving into %s: %w", dir, err), back())
		}
	}
	return back, nil
}

// removeStaleGuard removes the guard's cgroup of cfg.Agent where a guard
// killed before it could leave it left it empty (Open calls it: the
// agent's next start, --cleanup). A live guard keeps it busy, and it stays.
func removeStaleGuard(cfg Config) {
	if _, dirs, err := guardDirs(cfg); err == nil {
		for _, dir := range dirs {
			_ = os.Remove(dir)
		}
	}
}

// guardDirs returns the calling process's cgroup directories, one per
// hierarchy jobs use but the cpu one (homes), and the guard's cgroup
// beside the agent's subtree in each (dirs), the calling process being
// the agent or its guard. With cfg.Mode "none" there are none.
func guardDirs(cfg Config) (homes, dirs []string, err error) {
	if err := checkAgent(cfg.Agent); err != nil {
		return nil, nil, err
	}
	mode, mount, err := hierarchy(cfg)
	if err != nil {
		return nil, nil, err
	}
	var parents []string // the agent's cgroups, where its subtree is
	switch mode {
	case ModeV1:
		all, err := cgroup1.Default()
		if err != nil {
			return nil, nil, fmt.Errorf("legacy hierarchies: %w", err)
		}
		own := cgroup1.NestedPath("")
		for _, s := range all {
			if !slices.Contains(v1Used, s.Name()) || s.Name() == cgroup1.Cpu {
				continue // the guard needs no CPU weight
			}
			p, err := own(s.Name())
			if err != nil {
				return nil, nil, fmt.Errorf("own %s cgroup: %w", s.Name(), err)
			}
			path := s.(interface{ Path(string) string }).Path
			a, _ := agentCgroup(p)
			homes, parents = append(homes, path(p)), append(parents, path(a))
		}
	case ModeV2:
		p, err := ownCgroupV2()
		if err != nil {
			return nil, nil, err
		}
		a, guard := agentCgroup(p)
		if !guard && path.Base(a) == agentLeaf { // the agent's leaf (leaveInternal)
			a = path.Dir(a)
		}
		homes, parents = []string{filepath.Join(mount, p)}, []string{filepath.Join(mount, a)}
	}
	for _, parent := range parents {
		dirs = append(dirs, filepath.Join(parent, "cosched", cfg.Agent+GuardSuffix))
	}
	return homes, dirs, nil
}

// agentCgroup is the cgroup (a path in its hierarchy) an agent's process
// in cgroup p acts from: p, or for its cleanup guard, which is in
// <agent's>/cosched/<subtree>.guard (Escape), the agent's; guard says
// which.
func agentCgroup(p string) (agent string, guard bool) {
	dir, base := path.Split(path.Clean(p))
	if strings.HasSuffix(base, GuardSuffix) && path.Base(dir) == "cosched" {
		return path.Dir(path.Clean(dir)), true
	}
	return p, false
}

// removeIfEmpty removes <own>/cosched (dir) once no agent's subtree or
// guard is left in it: a batch system removes the step's cgroup it is in
// only when it is empty (Slurm's proctrack/cgroup). A busy one stays.
func removeIfEmpty(dir string) {
	_ = os.Remove(dir)
}
