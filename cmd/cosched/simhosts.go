package main

import (
	"fmt"
	"os"
	"strings"
	"time"

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
	isQuantum   time.Duration
	isMemory    string
	isMinRun    time.Duration
	eqInterval  time.Duration
	eqFullAfter time.Duration

	machine []hosts.Host // parsed from machineFile
	isCfg   jss.ImmediateService
}

func (h *hostsFlags) add(fl *pflag.FlagSet) {
	d := jss.DefaultImmediateService()
	fl.StringVar(&h.machineFile, "machine-file", "", "hosts of different sizes, one per line: name processors memory (e.g. big 64 16GB; - for unlimited memory; # comments); runs fcfs-bf, sjf-bf, priority-bf, lxfw-bf and eqspatial on them, each job on one host")
	fl.BoolVar(&h.is, "immediate-service", false, "priority-backfill policies: a job that cannot start at once gets a quantum, preempting the processors (not the memory) of long-running jobs")
	fl.DurationVar(&h.isQuantum, "is-quantum", d.Quantum, "immediate service: the quantum; a job not done by then is killed and queued")
	fl.StringVar(&h.isMemory, "is-memory", hosts.FormatMemory(d.Memory), "immediate service: the most memory (in all) a job may have to get a quantum; - for any")
	fl.DurationVar(&h.isMinRun, "is-min-run", d.MinRun, "immediate service: only jobs that have run uninterrupted longer than this and have more than this left (by estimate) are preempted")
	fl.DurationVar(&h.eqInterval, "eq-interval", jss.DefaultEQSpatial().Interval, "eqspatial: the least time between two repartitions of a host")
	fl.DurationVar(&h.eqFullAfter, "eq-full-after", 0, "eqspatial: jobs that have run longer than this get their full request first (e.g. 50h; 0 = off)")
}

// engines sets the hosts engine's part of e: the priority-backfill
// policies run on it with a machine file or immediate service.
func (h *hostsFlags) engines(e *jss.Engines) {
	e.Hosts, e.OnHosts = h.machine, h.machineFile != "" || h.is
	if h.is {
		is := h.isCfg
		e.IS = &is
	}
	e.EQ = jss.EQSpatial{Interval: h.eqInterval, FullAfter: h.eqFullAfter}
}

// validate checks the multi-host flags against the policies and reads the
// machine file. Every problem names its flag.
func (h *hostsFlags) validate(policies []gang.Policy, procs int, changed func(string) bool) []error {
	var errs []error
	anyBF, anyEQ := false, false
	for _, p := range policies {
		switch {
		case p == jss.PolicyEQSpatial:
			anyEQ = true
		case gang.IsPriorityBackfill(p):
			anyBF = true
		case h.machineFile != "":
			errs = append(errs, fmt.Errorf("--policy %s: does not run on hosts from --machine-file (those run fcfs-bf, sjf-bf, priority-bf, lxfw-bf, eqspatial)", p))
		}
	}
	if h.machineFile != "" {
		if changed("procs") {
			errs = append(errs, fmt.Errorf("--procs %d: not with --machine-file (the machine is the file's hosts)", procs))
		}
		if err := h.readMachine(); err != nil {
			errs = append(errs, fmt.Errorf("--machine-file: %w", err))
		}
	}
	if h.is && !anyBF && policies != nil {
		errs = append(errs, fmt.Errorf("--immediate-service applies only to the priority-backfill policies (fcfs-bf, sjf-bf, priority-bf, lxfw-bf); none is selected"))
	}
	for _, name := range []string{"is-quantum", "is-memory", "is-min-run"} {
		if changed(name) && !h.is {
			errs = append(errs, fmt.Errorf("--%s: applies only with --immediate-service", name))
		}
	}
	for _, name := range []string{"eq-interval", "eq-full-after"} {
		if changed(name) && !anyEQ && policies != nil {
			errs = append(errs, fmt.Errorf("--%s: applies only with --policy %s", name, jss.PolicyEQSpatial))
		}
	}
	mem, err := hosts.ParseMemory(h.isMemory)
	if err != nil {
		errs = append(errs, fmt.Errorf("--is-memory %q: %w", h.isMemory, err))
	}
	h.isCfg = jss.ImmediateService{Quantum: h.isQuantum, Memory: mem, MinRun: h.isMinRun}
	errs = append(errs, flagNames{"Quantum": "--is-quantum", "MinRun": "--is-min-run", "Memory": "--is-memory"}.list(h.isCfg.Validate())...)
	eq := jss.EQSpatial{Interval: h.eqInterval, FullAfter: h.eqFullAfter}
	errs = append(errs, flagNames{"Interval": "--eq-interval", "FullAfter": "--eq-full-after"}.list(eq.Validate())...)
	return errs
}

func (h *hostsFlags) readMachine() error {
	file, err := os.Open(h.machineFile)
	if err != nil {
		return err
	}
	defer file.Close()
	h.machine, err = hosts.ParseMachine(file, h.machineFile)
	return err
}

// isEQSpatial reports whether a --policy entry names eqspatial.
func isEQSpatial(name string) bool {
	return strings.EqualFold(strings.TrimSpace(name), jss.EQSpatialName)
}
