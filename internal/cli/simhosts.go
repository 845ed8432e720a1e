package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/hosts"
	"github.com/cosched/cosched/jss"
)

// hostsFlags are the options of the multi-host policies of `cosched sim`:
// the machine file, immediate service and EQspatial.
type hostsFlags struct {
	machineFile string
	is          bool
	isCfg       jss.ImmediateService // but its memory, read from isMemory
	isMemory    string
	eq          jss.EQSpatial

	machine []hosts.Host // read from machineFile
}

func (h *hostsFlags) add(fl *pflag.FlagSet) {
	d := jss.DefaultImmediateService()
	fl.StringVar(&h.machineFile, "machine-file", "", "hosts of different sizes, one per line: name processors memory (e.g. big 64 16GB; - for unlimited memory; # comments); runs fcfs-bf, sjf-bf, priority-bf, lxfw-bf and eqspatial on them, each job on one host")
	fl.BoolVar(&h.is, "immediate-service", false, "priority-backfill policies: a job that cannot start at once gets a quantum, preempting the processors (not the memory) of long-running jobs")
	fl.DurationVar(&h.isCfg.Quantum, "is-quantum", d.Quantum, "immediate service: the quantum; a job not done by then is killed and queued")
	fl.StringVar(&h.isMemory, "is-memory", hosts.FormatMemory(d.Memory), "immediate service: the most memory (in all) a job may have to get a quantum; - for any")
	fl.DurationVar(&h.isCfg.MinRun, "is-min-run", d.MinRun, "immediate service: only jobs that have run uninterrupted longer than this and have more than this left (by estimate) are preempted")
	fl.DurationVar(&h.eq.Interval, "eq-interval", jss.DefaultEQSpatial().Interval, "eqspatial: the least time between two repartitions of a host")
	fl.DurationVar(&h.eq.FullAfter, "eq-full-after", 0, "eqspatial: jobs that have run longer than this get their full request first (e.g. 50h; 0 = off)")
}

// engines sets the hosts engine's part of e: the priority-backfill
// policies run on it with a machine file or immediate service.
func (h *hostsFlags) engines(e *jss.Engines) {
	e.Hosts, e.OnHosts, e.EQ = h.machine, h.machineFile != "" || h.is, h.eq
	if h.is {
		is := h.isCfg
		e.IS = &is
	}
}

// validate checks the multi-host flags against the policies (nil: not
// known) and reads the machine file. Every problem names its flag.
func (h *hostsFlags) validate(policies []gang.Policy, procs int, changed func(string) bool) []error {
	var errs []error
	if h.machineFile != "" {
		for _, p := range policies {
			if p != jss.PolicyEQSpatial && !gang.IsPriorityBackfill(p) {
				errs = append(errs, fmt.Errorf("--policy %s: does not run on hosts from --machine-file (those run fcfs-bf, sjf-bf, priority-bf, lxfw-bf, eqspatial)", p))
			}
		}
		if changed("procs") {
			errs = append(errs, fmt.Errorf("--procs %d: not with --machine-file (the machine is the file's hosts)", procs))
		}
		var err error
		if h.machine, err = jss.ReadMachineFile(h.machineFile); err != nil {
			errs = append(errs, fmt.Errorf("--machine-file: %w", err))
		}
	}
	if h.is && policies != nil && !slices.ContainsFunc(policies, gang.IsPriorityBackfill) {
		errs = append(errs, fmt.Errorf("--immediate-service applies only to the priority-backfill policies (fcfs-bf, sjf-bf, priority-bf, lxfw-bf); none is selected"))
	}
	for _, name := range []string{"is-quantum", "is-memory", "is-min-run"} {
		if changed(name) && !h.is {
			errs = append(errs, fmt.Errorf("--%s: applies only with --immediate-service", name))
		}
	}
	for _, name := range []string{"eq-interval", "eq-full-after"} {
		if changed(name) && policies != nil && !slices.Contains(policies, jss.PolicyEQSpatial) {
			errs = append(errs, fmt.Errorf("--%s: applies only with --policy %s", name, jss.PolicyEQSpatial))
		}
	}
	var err error
	if h.isCfg.Memory, err = hosts.ParseMemory(h.isMemory); err != nil {
		errs = append(errs, fmt.Errorf("--is-memory %q: %w", h.isMemory, err))
	}
	errs = append(errs, FlagNames{"Quantum": "--is-quantum", "MinRun": "--is-min-run", "Memory": "--is-memory"}.List(h.isCfg.Validate())...)
	return append(errs, FlagNames{"Interval": "--eq-interval", "FullAfter": "--eq-full-after"}.List(h.eq.Validate())...)
}
