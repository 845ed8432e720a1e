package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/jss"
)

// pfcfsFlags are the --pfcfs-* parameters of `cosched sim` and `cosched
// sim sweep`, bound to the configuration they set.
type pfcfsFlags struct {
	jss.PFCFSConfig
	changed func(name string) bool
}

func addPFCFSFlags(fl *pflag.FlagSet, f *pfcfsFlags) {
	d, s := pfcfs.DefaultConfig(1), &f.Scheduler
	fl.Float64Var(&s.WidePercent, "pfcfs-wide", d.WidePercent, "pfcfs: a job needing at least this percentage of the machine is wide and may preempt")
	fl.DurationVar(&s.Delay, "pfcfs-delay", d.Delay, "pfcfs: start delay δ, from when a wide job is first in line (and no earlier wide job is active) to its preemption")
	fl.DurationVar(&s.Switch, "pfcfs-switch", d.Switch, "pfcfs: time Δ between context switches of a wide job and the jobs it preempted")
	fl.IntVar(&s.Switches, "pfcfs-switches", d.Switches, "pfcfs: most context switches n, the first preemption included (odd: the wide job finishes first; even: the preempted jobs do)")
	fl.DurationVar(&f.Penalty, "pfcfs-penalty", 0, "pfcfs: time added to a job's remaining runtime each time it is preempted")
	f.changed = fl.Changed
}

var pfcfsFlagNames = FlagNames{"Scheduler.WidePercent": "--pfcfs-wide", "Scheduler.Delay": "--pfcfs-delay", "Scheduler.Switch": "--pfcfs-switch",
	"Scheduler.Switches": "--pfcfs-switches", "Penalty": "--pfcfs-penalty"}

// validate checks the --pfcfs-* flags (jss.PFCFSConfig.Validate); selected
// reports whether --policy names pfcfs (the flags are an error without it).
func (f *pfcfsFlags) validate(selected bool) []error {
	if selected {
		return pfcfsFlagNames.List(f.Validate())
	}
	var errs []error
	for _, name := range []string{"pfcfs-wide", "pfcfs-delay", "pfcfs-switch", "pfcfs-switches", "pfcfs-penalty"} {
		if f.changed != nil && f.changed(name) {
			errs = append(errs, fmt.Errorf("--%s: applies only with --policy %s", name, pfcfs.Name))
		}
	}
	return errs
}

func (f *pfcfsFlags) config() jss.PFCFSConfig { return f.PFCFSConfig }

// isPFCFS reports whether a --policy entry names pfcfs.
func isPFCFS(name string) bool {
	info, err := jss.LookupPolicy(name)
	return err == nil && info.Engine == jss.EnginePFCFS
}
