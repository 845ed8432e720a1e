package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/internal/jobtable"
	"github.com/cosched/cosched/internal/slurmtime"
	"github.com/cosched/cosched/internal/textvalue"
)

// submitFlags are submit's settings; spec is filled from them.
type submitFlags struct {
	cf           clientFlags
	spec         api.JobSpec
	limit, mem   string
	export       string
	parsable     bool
	benchRuntime time.Duration
	nodes        int
}

func newSubmitCmd() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit -n TASKS -t LIMIT [flags] -- COMMAND [ARGS...]  |  submit -n TASKS --bench G,V,COMM,SYNC --runtime D",
		Short: "Submit a job: COMMAND runs once per rank, one rank per processor",
		RunE: func(cmd *cobra.Command, args []string) error {
			warnDeprecated(cmd, map[string]string{"procs": "-n/--ntasks", "name": "-J/--job-name"})
			return submit(cmd, args, &f)
		},
	}
	f.addFlags(cmd)
	return cmd
}

// addFlags defines the command's flags on cmd, with f's values as defaults.
func (f *submitFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVarP(&f.spec.Processors, "ntasks", "n", 1, "tasks (ranks), one per processor")
	fl.IntVar(&f.spec.Processors, "procs", 1, "tasks (ranks)")
	_ = fl.MarkHidden("procs")
	fl.IntVarP(&f.nodes, "nodes", "N", 0, "nodes; without -n, one task per node")
	fl.StringVarP(&f.limit, "time", "t", "", "time limit, the runtime estimate: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or a Go duration (10m)")
	fl.StringVarP(&f.spec.Name, "job-name", "J", "", "job name (default: the command, or bench:TEMPLATE)")
	fl.StringVar(&f.spec.Name, "name", "", "job name")
	_ = fl.MarkHidden("name")
	fl.StringVar(&f.mem, "mem", "", "memory per process (e.g. 256MB)")
	fl.StringVar(&f.spec.Overrun, "overrun", "", "at the time limit: kill (default) or extend (the limit is only an estimate)")
	fl.StringVar(&f.spec.Bench, "bench", "", "run a benchmark job with this ⟨g,v,comm,sync⟩ template (e.g. 50ms,25ms,news,NB) instead of a command")
	fl.DurationVar(&f.benchRuntime, "runtime", 0, "benchmark: target dedicated runtime (sets the iterations)")
	fl.IntVar(&f.spec.BenchIterations, "iterations", 0, "benchmark: iterations")
	fl.StringVar(&f.spec.BenchWork, "work", "cpu", "benchmark: compute by burning CPU (cpu) or by waiting (wall, for more agents than cores)")
	fl.Uint64Var(&f.spec.BenchSeed, "seed", 0, "benchmark: seed of the compute-time draws (default: the job id)")
	fl.StringVar(&f.spec.MPI, "mpi", "", "process-management interface for an MPI program, as srun's --mpi: pmi1 (MPICH's simple PMI) or none (default: the cluster's; docs/mpi.md)")
	fl.StringVar(&f.export, "export", "NONE", "environment the ranks get, as sbatch's --export: NONE (a clean one), ALL (this shell's), or NAME[=VALUE],… optionally after ALL or NONE (docs/security.md)")
	fl.BoolVar(&f.parsable, "parsable", false, "print only the job id")
	f.cf.add(cmd)
}

func submit(cmd *cobra.Command, args []string, f *submitFlags) error {
	if err := f.validate(cmd, args); err != nil {
		return err
	}
	c, err := f.cf.client()
	if err != nil {
		return err
	}
	// The ranks start where the user submitted (sbatch's default), if
	// the nodes have that directory.
	if wd, err := os.Getwd(); err == nil {
		f.spec.Dir = wd
	}
	id, err := c.Submit(cmd.Context(), f.spec)
	if err != nil {
		return err
	}
	if f.parsable {
		fmt.Fprintln(cmd.OutOrStdout(), id)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "Submitted job %d\n", id)
	}
	return nil
}

// validate checks every flag and fills in f.spec, reporting all problems.
func (f *submitFlags) validate(cmd *cobra.Command, args []string) error {
	spec := &f.spec
	errs, tpl := f.program(cmd, args)
	if _, err := api.ParseMPI(spec.MPI); err != nil {
		errs = append(errs, fmt.Errorf("--mpi: %v", err))
	}
	errs = append(errs, f.size(cmd.Flags().Changed)...)
	if err := checkInt("--iterations", int64(spec.BenchIterations), 0, maxIterations); err != nil {
		errs = append(errs, err)
	}
	if err := checkDuration("--runtime", f.benchRuntime, 0, maxSimDuration); err != nil {
		errs = append(errs, err)
	}
	if spec.Bench != "" && spec.Name == "" {
		spec.Name = "bench:" + spec.Bench
	}
	spec.User = currentUser()
	if spec.Bench != "" && len(errs) == 0 {
		f.benchDefaults(tpl)
	}
	errs = append(errs, f.limits()...)
	if len(errs) > 0 {
		return flagErrors(errs)
	}
	return nil
}

// program checks what the job runs: a command, or a benchmark (--bench).
func (f *submitFlags) program(cmd *cobra.Command, args []string) ([]error, bench.Template) {
	var errs []error
	var tpl bench.Template
	spec := &f.spec
	if spec.Bench == "" {
		if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
			errs = append(errs, errors.New("give the command after --, e.g. cosched submit -n 4 -t 1m -- ./prog (or a benchmark with --bench)"))
		}
		spec.Command = args
		return errs, tpl
	}
	var err error
	if len(args) > 0 {
		errs = append(errs, errors.New("--bench runs bench-rank: give no command"))
	}
	if tpl, err = bench.ParseTemplate(spec.Bench); err != nil {
		errs = append(errs, fmt.Errorf("--bench: %v", err))
	}
	switch {
	case (f.benchRuntime > 0) == (spec.BenchIterations > 0):
		errs = append(errs, errors.New("--bench needs exactly one of --runtime and --iterations"))
	case f.benchRuntime < 0:
		errs = append(errs, fmt.Errorf("--runtime %v: must be positive", f.benchRuntime))
	}
	if spec.BenchWork != "cpu" && spec.BenchWork != "wall" {
		errs = append(errs, fmt.Errorf("--work %q: want cpu or wall", spec.BenchWork))
	}
	return errs, tpl
}

// size checks -n and -N: without -n, one task per node, as sbatch.
func (f *submitFlags) size(changed func(string) bool) []error {
	var errs []error
	spec := &f.spec
	if changed("nodes") {
		if err := checkProcs("-N", f.nodes); err != nil {
			errs = append(errs, err)
		} else if !changed("ntasks") && !changed("procs") {
			spec.Processors = f.nodes
		} else if spec.Processors < f.nodes {
			errs = append(errs, fmt.Errorf("-n %d: fewer tasks than -N %d nodes", spec.Processors, f.nodes))
		}
	}
	if err := checkProcs("-n", spec.Processors); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// benchDefaults gives a benchmark job its iterations from --runtime and,
// without -t, the time limit its iterations are expected to take (an
// estimate: --overrun extend).
func (f *submitFlags) benchDefaults(tpl bench.Template) {
	spec := &f.spec
	net := bench.DefaultNetwork()
	if spec.BenchIterations == 0 {
		spec.BenchIterations = bench.Iterations(tpl, spec.Processors, net, f.benchRuntime)
	}
	if f.limit == "" {
		f.limit = bench.Job{Template: tpl, Iterations: spec.BenchIterations}.RuntimeEstimate(spec.Processors, net).String()
		if spec.Overrun == "" {
			spec.Overrun = "extend"
		}
	}
}

// limits checks -t, --overrun and --mem.
func (f *submitFlags) limits() []error {
	var errs []error
	spec := &f.spec
	d, err := slurmtime.Parse(f.limit)
	if err == nil && d <= 0 {
		err = errors.New("must be positive")
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("-t %q: %v", f.limit, strings.TrimPrefix(err.Error(), fmt.Sprintf("time limit %q: ", strings.TrimSpace(f.limit)))))
	}
	spec.TimeLimit = api.Duration{D: d}
	if spec.Overrun != "" && spec.Overrun != "kill" && spec.Overrun != "extend" {
		errs = append(errs, fmt.Errorf("--overrun %q: want kill or extend", spec.Overrun))
	}
	if f.mem != "" {
		if spec.Memory, err = textvalue.Size(f.mem); err != nil {
			errs = append(errs, fmt.Errorf("--mem %q: %v", f.mem, err))
		}
	}
	if spec.Env, err = api.ExportEnv(f.export, os.Environ()); err != nil {
		errs = append(errs, fmt.Errorf("--export: %v", err))
	}
	return errs
}

// queueFlags are queue's settings.
type queueFlags struct {
	cf                      clientFlags
	all, noHeader, long     bool
	format, jobList, states string
}

func newQueueCmd() *cobra.Command {
	var f queueFlags
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List jobs (squeue-like): JOBID NAME USER ST TIME NODES NODELIST(REASON)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return queue(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, "include finished jobs")
	fl.BoolVarP(&f.long, "long", "l", false, "add CPU time, peak memory and processes (from the jobs' cgroups)")
	fl.BoolVar(&f.noHeader, "noheader", false, "no header line")
	fl.StringVarP(&f.format, "format", "o", "", "squeue-style format of each line: "+jobtable.FieldLetters+" with optional [.]WIDTH")
	fl.StringVarP(&f.jobList, "jobs", "j", "", "only these jobs (comma-separated ids), whatever their state")
	fl.StringVarP(&f.states, "states", "t", "", "only jobs in these states: PD, R, CD, F, CA, TO (or their names), comma-separated, or all")
	f.cf.add(cmd)
	return cmd
}

func queue(cmd *cobra.Command, f *queueFlags) error {
	var errs []error
	var cols []jobtable.Column
	var sel jobtable.Filter
	var err error
	if f.format != "" {
		if cols, err = jobtable.ParseFormat(f.format); err != nil {
			errs = append(errs, fmt.Errorf("-o %q: %v", f.format, err))
		}
	}
	if f.jobList != "" {
		if sel.IDs, err = jobtable.ParseJobList(f.jobList); err != nil {
			errs = append(errs, fmt.Errorf("-j %q: %v", f.jobList, err))
		}
	}
	if f.states != "" {
		if sel.States, err = jobtable.ParseStates(f.states); err != nil {
			errs = append(errs, fmt.Errorf("-t %q: %v", f.states, err))
		}
	}
	if len(errs) > 0 {
		return flagErrors(errs)
	}
	c, err := f.cf.client()
	if err != nil {
		return err
	}
	jobs, err := c.Jobs(cmd.Context(), sel.Finished(f.all))
	if err != nil {
		return err
	}
	jobs = slices.DeleteFunc(jobs, func(j api.Job) bool { return !sel.Keep(j) })
	if cols == nil {
		jobtable.Queue(cmd.OutOrStdout(), jobs, f.noHeader, f.long)
	} else {
		jobtable.WriteFormat(cmd.OutOrStdout(), cols, jobs, f.noHeader)
	}
	return nil
}

func newCancelCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "cancel JOBID...",
		Short: "Cancel jobs: pending ones leave the queue, running ones' ranks are killed everywhere",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ids []int64
			var errs []error
			for _, a := range args {
				id, err := api.ParseJobID(a)
				if err != nil {
					errs = append(errs, err)
				}
				ids = append(ids, id)
			}
			if len(errs) > 0 {
				return flagErrors(errs)
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := c.Cancel(cmd.Context(), id); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cf.add(cmd)
	return cmd
}

func newNodesCmd() *cobra.Command {
	var cf clientFlags
	var stats bool
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "List the cluster's agents (--stats: strobe and switch statistics)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			rep, err := c.Nodes(cmd.Context(), stats)
			if err != nil {
				return err
			}
			jobtable.Nodes(cmd.OutOrStdout(), rep, stats)
			return nil
		},
	}
	cmd.Flags().BoolVar(&stats, "stats", false, "show strobe, switch and skew statistics")
	cf.add(cmd)
	return cmd
}

// currentUser is the submitting user's login name as this process knows
// it, for the job's USER column: the account of the real uid, else $USER.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// warnDeprecated warns on standard error (never standard output, which
// scripts read, e.g. with --parsable) about each old spelling used, by
// flag name, giving its replacement.
func warnDeprecated(cmd *cobra.Command, replacements map[string]string) {
	for _, old := range slices.Sorted(maps.Keys(replacements)) {
		if f := cmd.Flags().Lookup(old); f != nil && f.Changed {
			spelling := "--" + old
			if f.Shorthand != "" {
				spelling = "-" + f.Shorthand + "/" + spelling
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cosched: warning: %s is deprecated, use %s\n", spelling, replacements[old])
		}
	}
}
