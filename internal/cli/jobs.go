package cli

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/jobtable"
)

// submitFlags are submit's settings.
type submitFlags struct {
	cf       ClientFlags
	sub      api.Submission
	parsable bool
	chdir    string // -D: the ranks' working directory ("": where submit runs)
	wait     bool   // -W: return when the job ends, with its exit code
}

// submitFlagNames names api.Submission's and api.JobSpec's fields by
// submit's flags.
var submitFlagNames = FlagNames{"Processors": "-n", "Nodes": "-N", "TimeLimit": "-t", "Name": "-J", "Memory": "--mem", "Overrun": "--overrun",
	"Bench": "--bench", "BenchRuntime": "--runtime", "BenchIterations": "--iterations", "BenchWork": "--work", "BenchSeed": "--seed",
	"MPI": "--mpi", "Env": "--export", "Command": "COMMAND", "Dir": "-D"}

func newSubmitCmd() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit -n TASKS -t LIMIT [flags] -- COMMAND [ARGS...]  |  submit -n TASKS --bench G,V,COMM,SYNC --runtime D",
		Short: "Submit a job: COMMAND runs once per rank, one rank per processor",
		RunE: func(cmd *cobra.Command, args []string) error {
			WarnDeprecated(cmd, map[string]string{"procs": "-n/--ntasks", "name": "-J/--job-name"})
			return submit(cmd, args, &f)
		},
	}
	spec, fl := &f.sub.Spec, cmd.Flags()
	fl.IntVarP(&spec.Processors, "ntasks", "n", 1, "tasks (ranks), one per processor")
	fl.IntVar(&spec.Processors, "procs", 1, "tasks (ranks)")
	_ = fl.MarkHidden("procs")
	fl.IntVarP(&f.sub.Nodes, "nodes", "N", 0, "nodes; without -n, one task per node")
	fl.StringVarP(&f.sub.TimeLimit, "time", "t", "", "time limit, the runtime estimate: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or a Go duration (10m)")
	fl.StringVarP(&spec.Name, "job-name", "J", "", "job name (default: the command, or bench:TEMPLATE)")
	fl.StringVar(&spec.Name, "name", "", "job name")
	_ = fl.MarkHidden("name")
	fl.StringVar(&f.sub.Memory, "mem", "", "memory per process (e.g. 256MB)")
	fl.StringVar(&spec.Overrun, "overrun", "", "at the time limit: kill (default) or extend (the limit is only an estimate)")
	fl.StringVar(&spec.Bench, "bench", "", "run a benchmark job with this ⟨g,v,comm,sync⟩ template (e.g. 50ms,25ms,news,NB) instead of a command")
	fl.DurationVar(&f.sub.BenchRuntime, "runtime", 0, "benchmark: target dedicated runtime (sets the iterations)")
	fl.IntVar(&spec.BenchIterations, "iterations", 0, "benchmark: iterations")
	fl.StringVar(&spec.BenchWork, "work", "cpu", "benchmark: compute by burning CPU (cpu) or by waiting (wall, for more agents than cores)")
	fl.Uint64Var(&spec.BenchSeed, "seed", 0, "benchmark: seed of the compute-time draws (default: the job id)")
	fl.StringVar(&spec.MPI, "mpi", "", "process-management interface for an MPI program, as srun's --mpi: pmi1 (MPICH's simple PMI), pmix (PMIx, for Open MPI programs), cosched (MPICH programs run on cosched's MPI library, every message through the agents' relays: buffer-coscheduled under bcs) or none (default: the cluster's; docs/mpi.md)")
	fl.StringVar(&f.sub.Export, "export", "NONE", "environment the ranks get, as sbatch's --export: NONE (a clean one), ALL (this shell's), or NAME[=VALUE],… optionally after ALL or NONE (docs/security.md)")
	fl.BoolVar(&f.parsable, "parsable", false, "print only the job id")
	fl.StringVarP(&f.chdir, "chdir", "D", "", "the ranks' working directory, on every node, where a relative COMMAND is found (default: this directory)")
	fl.BoolVarP(&f.wait, "wait", "W", false, "return when the job ends, with its exit status as sbatch --wait: 0 if it completed, else its ranks' highest exit code or 1 (Ctrl-C stops waiting, not the job)")
	f.cf.Add(cmd)
	return cmd
}

func submit(cmd *cobra.Command, args []string, f *submitFlags) error {
	spec, err := f.spec(cmd, args)
	if err != nil {
		return err
	}
	c, err := f.cf.Client()
	if err != nil {
		return err
	}
	id, err := c.Submit(cmd.Context(), spec)
	if err != nil {
		return err
	}
	if f.parsable {
		fmt.Fprintln(cmd.OutOrStdout(), id)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "Submitted job %d\n", id)
	}
	if !f.wait {
		return nil
	}
	j, err := c.Wait(cmd.Context(), id, waitPoll)
	if err != nil {
		if cmd.Context().Err() != nil {
			return fmt.Errorf("stopped waiting; job %d goes on (cosched cancel %d ends it)", id, id)
		}
		return fmt.Errorf("waiting for job %d: %w", id, err)
	}
	if code := jobExitStatus(j); code != 0 {
		return exitStatusError{code, fmt.Errorf("job %d ended %s: %s", id, j.State, cmp.Or(j.Reason, "no reason given"))}
	}
	return nil
}

// waitPoll is how often submit --wait asks about its job.
const waitPoll = 200 * time.Millisecond

// jobExitStatus is submit --wait's exit status for an ended job, as
// sbatch --wait's: 0 if it completed, else the highest exit code of its
// ranks, or 1 when none exited non-zero (a signal, a time limit, a
// cancel).
func jobExitStatus(j api.Job) int {
	if j.State == api.Completed {
		return 0
	}
	code := 0
	for _, r := range j.Ranks {
		code = max(code, r.Code)
	}
	if code <= 0 || code > 255 {
		return 1
	}
	return code
}

// spec is the job the flags and the command describe, or every problem
// with them at once.
func (f *submitFlags) spec(cmd *cobra.Command, args []string) (api.JobSpec, error) {
	s, fl := f.sub, cmd.Flags()
	var errs []error
	var skip []string
	if s.Spec.Bench == "" && (cmd.ArgsLenAtDash() != 0 || len(args) == 0) {
		errs = append(errs, errors.New("give the command after --, e.g. cosched submit -n 4 -t 1m -- ./prog (or a benchmark with --bench)"))
		skip = append(skip, "Command")
	}
	if len(args) > 0 {
		s.Spec.Command = args
	}
	s.Spec.User = currentUser()
	names := submitFlagNames
	// Without -n, one task per node, as sbatch: -N's count is checked as
	// the tasks'.
	if fl.Changed("nodes") && !fl.Changed("ntasks") && !fl.Changed("procs") {
		s.Spec.Processors, names = s.Nodes, maps.Clone(names)
		names["Processors"], skip = "-N", append(skip, "Nodes")
	} else if fl.Changed("nodes") && s.Nodes == 0 { // 0 is no -N to the library: given, it is refused
		errs = append(errs, names.error(fielderr.New("Nodes", 0, "must be from 1 to %d", gang.MaxProcessors)))
	}
	// The ranks start where the user submitted (sbatch's default), if
	// the nodes have that directory.
	// -D is relative to this directory, as sbatch's.
	wd, wdErr := os.Getwd()
	switch {
	case f.chdir == "" && wdErr == nil:
		s.Spec.Dir = wd
	case filepath.IsAbs(f.chdir):
		s.Spec.Dir = filepath.Clean(f.chdir)
	case f.chdir != "" && wdErr == nil:
		s.Spec.Dir = filepath.Join(wd, f.chdir)
	case f.chdir != "":
		errs = append(errs, fmt.Errorf("-D %s: a relative directory, but this one is unknown: %w", f.chdir, wdErr))
	}
	spec, err := s.JobSpec(os.Environ())
	if errs = append(errs, names.List(err, skip...)...); len(errs) > 0 {
		return spec, FlagErrors(errs)
	}
	return spec, nil
}

// queueFlagNames names jobtable.Query's fields by queue's flags.
var queueFlagNames = FlagNames{"Format": "-o", "Jobs": "-j", "States": "-t"}

func newQueueCmd() *cobra.Command {
	var cf ClientFlags
	var q jobtable.Query
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List jobs (squeue-like): JOBID NAME USER ST TIME NODES NODELIST(REASON)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := q.Parse()
			if err != nil {
				return queueFlagNames.Errors(err)
			}
			c, err := cf.Client()
			if err != nil {
				return err
			}
			jobs, err := c.Jobs(cmd.Context(), l.Finished())
			if err != nil {
				return err
			}
			l.Write(cmd.OutOrStdout(), jobs)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&q.All, "all", false, "include finished jobs")
	fl.BoolVarP(&q.Long, "long", "l", false, "add CPU time, peak memory and processes (from the jobs' cgroups)")
	fl.BoolVar(&q.NoHeader, "noheader", false, "no header line")
	fl.StringVarP(&q.Format, "format", "o", "", "squeue-style format of each line: "+jobtable.FieldLetters+" with optional [.]WIDTH")
	fl.StringVarP(&q.Jobs, "jobs", "j", "", "only these jobs (comma-separated ids), whatever their state")
	fl.StringVarP(&q.States, "states", "t", "", "only jobs in these states: PD, R, CD, F, CA, TO (or their names), comma-separated, or all")
	cf.Add(cmd)
	return cmd
}

func newCancelCmd() *cobra.Command {
	var cf ClientFlags
	cmd := &cobra.Command{
		Use:   "cancel JOBID...",
		Short: "Cancel jobs: pending ones leave the queue, running ones' ranks are killed everywhere",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachJob(&cf, args, func(c *api.Client, _ int, id int64) error { return c.Cancel(cmd.Context(), id) })
		},
	}
	cf.Add(cmd)
	return cmd
}

// eachJob calls do for each job id of args (the i-th), with the client
// of cf, once every id has parsed; it goes on past a job do fails for and
// returns every failure.
func eachJob(cf *ClientFlags, args []string, do func(c *api.Client, i int, id int64) error) error {
	ids, err := parseJobIDs(args)
	if err != nil {
		return err
	}
	c, err := cf.Client()
	if err != nil {
		return err
	}
	var errs []error
	for i, id := range ids {
		if err := do(c, i, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseJobIDs reads job ids given as arguments, naming every bad one.
func parseJobIDs(args []string) ([]int64, error) {
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
		return nil, FlagErrors(errs)
	}
	return ids, nil
}

func newShowCmd() *cobra.Command {
	var cf ClientFlags
	cmd := &cobra.Command{
		Use:   "show [job] JOBID...",
		Short: "Every field of jobs, as scontrol show job: state and reason, times, limit, nodes, command, directory, exit code",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "job" { // scontrol's spelling
				args = args[1:]
			}
			if len(args) == 0 {
				return usageError{errors.New("give a job id: cosched show JOBID")}
			}
			return eachJob(&cf, args, func(c *api.Client, i int, id int64) error {
				j, err := c.Job(cmd.Context(), id)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				jobtable.Show(cmd.OutOrStdout(), j)
				return nil
			})
		},
	}
	cf.Add(cmd)
	return cmd
}

func newNodesCmd() *cobra.Command {
	var cf ClientFlags
	var stats bool
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "List the cluster's agents (--stats: strobe and switch statistics)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.Client()
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
	cf.Add(cmd)
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

// WarnDeprecated warns on standard error (never standard output, which
// scripts read, e.g. with --parsable) about each old spelling used, by
// flag name, giving its replacement.
func WarnDeprecated(cmd *cobra.Command, replacements map[string]string) {
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
