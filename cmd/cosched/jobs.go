package main

import (
	"errors"
	"fmt"
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/jss"
	"io"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/internal/slurmtime"
)

func newSubmitCmd() *cobra.Command {
	var cf clientFlags
	var spec api.JobSpec
	var limit, mem string
	var parsable bool
	var benchRuntime time.Duration
	var nodes int
	cmd := &cobra.Command{
		Use:   "submit -n TASKS -t LIMIT [flags] -- COMMAND [ARGS...]  |  submit -n TASKS --bench G,V,COMM,SYNC --runtime D",
		Short: "Submit a job: COMMAND runs once per rank, one rank per processor",
		Long: `Submit a parallel job. COMMAND runs once per rank with COSCHED_JOB, COSCHED_RANK,
COSCHED_SIZE and COSCHED_NODE in its environment; its output goes to
<state dir>/agents/<agent>/jobs/<id>/rank-<rank>.{out,err} on the agent that
ran it. The time limit is the job's runtime estimate (backfilling uses it); a
job still running at its limit is killed (TIMEOUT; --overrun extend lets it
run on) — under gang scheduling the limit counts wall time dilated by the MPL.
Limits take Slurm's forms (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS;
a bare number is minutes) or Go durations (90s, 1h30m).

-n is the number of tasks (ranks), one per processor, as in sbatch. -N asks
for nodes: without -n a job gets one task per node (sbatch's default); with
-n it must be at least -N. Ranks are placed on processors: on agents with one
processor each (cluster up's default) a task is a node; a node count for
agents of several processors is not enforced yet.

An MPI program built with MPICH runs with --mpi pmi1: the agents serve its
ranks the PMI-1 protocol (docs/mpi.md); "cosched output --label JOB" prints
every rank's output, labelled with its rank.

A benchmark job (--bench) runs the agents' own "cosched bench-rank" with a
⟨g,v,comm,sync⟩ template: each rank computes for g ± v/2, then communicates
(barrier, news or transpose; blocking B or non-blocking NB) through the
relays, for --iterations, or as many as make --runtime of dedicated run
time. Without -t its limit is that runtime estimate, used for backfilling
only (--overrun extend). Each rank reports its compute time, communication
wait and wall time in the job's record (GET /v1/jobs/ID); cosched bench run
collects them for whole workloads.`,
		Example: `  cosched submit -n 8 -t 10 -- ./solver input.dat
  cosched submit -n 4 -t 0:30 -J spin --parsable -- sh -c 'while :; do :; done'
  cosched submit -n 8 -t 5m --mpi pmi1 -- ./a.out
  cosched submit -n 8 --bench 50ms,25ms,news,NB --runtime 20s
  cosched submit -n 4 --bench 100,50,transpose,B --iterations 200 --work wall`,
		RunE: func(cmd *cobra.Command, args []string) error {
			warnDeprecated(cmd, map[string]string{"procs": "-n/--ntasks", "name": "-J/--job-name"})
			var errs []error
			var tpl bench.Template
			if spec.Bench == "" {
				if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
					errs = append(errs, errors.New("give the command after --, e.g. cosched submit -n 4 -t 1m -- ./prog (or a benchmark with --bench)"))
				}
				spec.Command = args
			} else {
				var err error
				if len(args) > 0 {
					errs = append(errs, errors.New("--bench runs bench-rank: give no command"))
				}
				if tpl, err = bench.ParseTemplate(spec.Bench); err != nil {
					errs = append(errs, fmt.Errorf("--bench: %v", err))
				}
				switch {
				case (benchRuntime > 0) == (spec.BenchIterations > 0):
					errs = append(errs, errors.New("--bench needs exactly one of --runtime and --iterations"))
				case benchRuntime < 0:
					errs = append(errs, fmt.Errorf("--runtime %v: must be positive", benchRuntime))
				}
				if spec.BenchWork != "cpu" && spec.BenchWork != "wall" {
					errs = append(errs, fmt.Errorf("--work %q: want cpu or wall", spec.BenchWork))
				}
			}
			if _, err := api.ParseMPI(spec.MPI); err != nil {
				errs = append(errs, fmt.Errorf("--mpi: %v", err))
			}
			if cmd.Flags().Changed("nodes") {
				if err := checkProcs("-N", nodes); err != nil {
					errs = append(errs, err)
				} else if !cmd.Flags().Changed("ntasks") && !cmd.Flags().Changed("procs") {
					spec.Processors = nodes // one task per node, as sbatch
				} else if spec.Processors < nodes {
					errs = append(errs, fmt.Errorf("-n %d: fewer tasks than -N %d nodes", spec.Processors, nodes))
				}
			}
			if err := checkProcs("-n", spec.Processors); err != nil {
				errs = append(errs, err)
			}
			if err := checkInt("--iterations", int64(spec.BenchIterations), 0, maxIterations); err != nil {
				errs = append(errs, err)
			}
			if err := checkDuration("--runtime", benchRuntime, 0, maxSimDuration); err != nil {
				errs = append(errs, err)
			}
			if spec.Bench != "" && spec.Name == "" {
				spec.Name = "bench:" + spec.Bench
			}
			spec.User = currentUser()
			if spec.Bench != "" && len(errs) == 0 {
				// The estimate the simulator would use: iterations × the
				// expected dedicated iteration.
				iter := jss.IterationEstimate(tpl, spec.Processors, jss.DefaultNetwork())
				if spec.BenchIterations == 0 {
					spec.BenchIterations = benchIterations(tpl, spec.Processors, bench.DefaultMessageSize, benchRuntime)
				}
				if limit == "" {
					limit = (time.Duration(spec.BenchIterations) * iter).String()
					if spec.Overrun == "" {
						spec.Overrun = "extend"
					}
				}
			}
			d, err := slurmtime.Parse(limit)
			if err == nil && d <= 0 {
				err = errors.New("must be positive")
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("-t %q: %v", limit, strings.TrimPrefix(err.Error(), fmt.Sprintf("time limit %q: ", strings.TrimSpace(limit)))))
			}
			spec.TimeLimit = api.Duration{D: d}
			if spec.Overrun != "" && spec.Overrun != "kill" && spec.Overrun != "extend" {
				errs = append(errs, fmt.Errorf("--overrun %q: want kill or extend", spec.Overrun))
			}
			if mem != "" {
				if spec.Memory, err = parseSize(mem); err != nil {
					errs = append(errs, fmt.Errorf("--mem %q: %v", mem, err))
				}
			}
			if len(errs) > 0 {
				return flagErrors(errs)
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			// The ranks start where the user submitted (sbatch's
			// default), if the nodes have that directory.
			if wd, err := os.Getwd(); err == nil {
				spec.Dir = wd
			}
			id, err := c.Submit(cmd.Context(), spec)
			if err != nil {
				return err
			}
			if parsable {
				fmt.Fprintln(cmd.OutOrStdout(), id)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "Submitted job %d\n", id)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&spec.Processors, "ntasks", "n", 1, "tasks (ranks), one per processor")
	fl.IntVar(&spec.Processors, "procs", 1, "tasks (ranks)")
	_ = fl.MarkHidden("procs")
	fl.IntVarP(&nodes, "nodes", "N", 0, "nodes; without -n, one task per node")
	fl.StringVarP(&limit, "time", "t", "", "time limit, the runtime estimate: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or a Go duration (10m)")
	fl.StringVarP(&spec.Name, "job-name", "J", "", "job name (default: the command, or bench:TEMPLATE)")
	fl.StringVar(&spec.Name, "name", "", "job name")
	_ = fl.MarkHidden("name")
	fl.StringVar(&mem, "mem", "", "memory per process (e.g. 256MB)")
	fl.StringVar(&spec.Overrun, "overrun", "", "at the time limit: kill (default) or extend (the limit is only an estimate)")
	fl.StringVar(&spec.Bench, "bench", "", "run a benchmark job with this ⟨g,v,comm,sync⟩ template (e.g. 50ms,25ms,news,NB) instead of a command")
	fl.DurationVar(&benchRuntime, "runtime", 0, "benchmark: target dedicated runtime (sets the iterations)")
	fl.IntVar(&spec.BenchIterations, "iterations", 0, "benchmark: iterations")
	fl.StringVar(&spec.BenchWork, "work", "cpu", "benchmark: compute by burning CPU (cpu) or by waiting (wall, for more agents than cores)")
	fl.Uint64Var(&spec.BenchSeed, "seed", 0, "benchmark: seed of the compute-time draws (default: the job id)")
	fl.StringVar(&spec.MPI, "mpi", "", "process-management interface for an MPI program, as srun's --mpi: pmi1 (MPICH's simple PMI) or none (default: the cluster's; docs/mpi.md)")
	fl.BoolVar(&parsable, "parsable", false, "print only the job id")
	cf.add(cmd)
	return cmd
}

func newQueueCmd() *cobra.Command {
	var cf clientFlags
	var all, noHeader, long bool
	var format, jobList, states string
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List jobs (squeue-like): JOBID NAME USER ST TIME NODES NODELIST(REASON)",
		Long: `List pending and running jobs (--all, or -t with finished states: finished
ones too). ST is the state: PD pending, R running, CD completed, F failed, CA
cancelled, TO timeout. TIME is the time the job has run. For a pending job the
last column says why it waits; for a failed one why it failed. USER is the
job's owner as the agent authenticated it (docs/security.md).

-o/--format takes squeue's % fields (` + queueFieldLetters + `),
each as %[.][WIDTH]FIELD: WIDTH cuts or pads the value, "." right-justifies
it; other text is printed as is.

--long adds the accounting the agents read from the jobs' cgroups once a
job's ranks end: CPU time, peak memory (the largest node's) and the most
processes seen at once.`,
		Example: `  cosched queue
  cosched queue -t PD,R -j 3,4 --noheader
  cosched queue --all -o "%.6i %-12j %8u %.2t %.10M %.10l %R"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []error
			var cols []queueColumn
			if format != "" {
				var err error
				if cols, err = parseQueueFormat(format); err != nil {
					errs = append(errs, fmt.Errorf("-o %q: %v", format, err))
				}
			}
			var ids map[int64]bool
			if jobList != "" {
				ids = map[int64]bool{}
				for _, item := range strings.Split(jobList, ",") {
					id, err := api.ParseJobID(strings.TrimSpace(item))
					if err != nil {
						errs = append(errs, fmt.Errorf("-j %q: %v", jobList, err))
						break
					}
					ids[id] = true
				}
			}
			var want map[api.State]bool
			if states != "" {
				var err error
				if want, err = parseStates(states); err != nil {
					errs = append(errs, fmt.Errorf("-t %q: %v", states, err))
				}
			}
			if len(errs) > 0 {
				return flagErrors(errs)
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			// Finished jobs are asked for when shown: --all, a job list
			// (squeue -j shows a job whatever its state) or finished states.
			finished := all || ids != nil
			for st := range want {
				finished = finished || st.Done()
			}
			jobs, err := c.Jobs(cmd.Context(), finished)
			if err != nil {
				return err
			}
			jobs = slices.DeleteFunc(jobs, func(j api.Job) bool {
				return ids != nil && !ids[j.ID] || want != nil && !want[j.State]
			})
			if cols == nil {
				writeQueue(cmd.OutOrStdout(), jobs, noHeader, long)
			} else {
				writeQueueFormat(cmd.OutOrStdout(), cols, jobs, noHeader)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "include finished jobs")
	fl.BoolVarP(&long, "long", "l", false, "add CPU time, peak memory and processes (from the jobs' cgroups)")
	fl.BoolVar(&noHeader, "noheader", false, "no header line")
	fl.StringVarP(&format, "format", "o", "", "squeue-style format of each line: "+queueFieldLetters+" with optional [.]WIDTH")
	fl.StringVarP(&jobList, "jobs", "j", "", "only these jobs (comma-separated ids), whatever their state")
	fl.StringVarP(&states, "states", "t", "", "only jobs in these states: PD, R, CD, F, CA, TO (or their names), comma-separated, or all")
	cf.add(cmd)
	return cmd
}

func writeQueue(w io.Writer, jobs []api.Job, noHeader, long bool) {
	var rows [][]string
	if !noHeader {
		head := []string{"JOBID", "NAME", "USER", "ST", "TIME", "NODES"}
		if long {
			head = append(head, "CPU", "MAXMEM", "PROCS")
		}
		rows = append(rows, append(head, "NODELIST(REASON)"))
	}
	for _, j := range jobs {
		r := []string{fmt.Sprint(j.ID), truncate(jobName(j), 16), truncate(orDash(j.Spec.User), 10),
			j.State.Code(), slurmtime.Format(j.Elapsed.D), nodeCount(j)}
		if long {
			r = append(r, usageColumns(j.Usage)...)
		}
		rows = append(rows, append(r, nodesOrReason(j)))
	}
	writeColumns(w, rows)
}

func distinct(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// writeColumns aligns rows in left-aligned columns.
func writeColumns(w io.Writer, rows [][]string) {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len([]rune(c))))
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

func newCancelCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "cancel JOBID...",
		Short: "Cancel jobs: pending ones leave the queue, running ones' ranks are killed everywhere",
		Long: `Cancel jobs: pending ones leave the queue, running ones' ranks are killed
everywhere. Like scancel, it prints nothing on success; a job it could not
cancel is reported on standard error and the exit status is 1.`,
		Args: cobra.MinimumNArgs(1),
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
		Long: `List the agents: name, state, processors, the matrix columns they host and
their running jobs. With --stats, per agent: strobes applied, lost and late,
strobe-to-switch latency and switch cost (p50/p99 over recent slices), slot
reuses (bcs: a blocked rank's processor lent to another rank) and the relay's
messages delivered to and sent by local ranks; and for
the cluster: the switch skew across agents per slice (p50/p99/max; exact on
one host, where agents share the monotonic clock), strobes sent and slices
whose strobe went out late (overruns).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			rep, err := c.Nodes(cmd.Context(), stats)
			if err != nil {
				return err
			}
			writeNodes(cmd.OutOrStdout(), rep, stats)
			return nil
		},
	}
	cmd.Flags().BoolVar(&stats, "stats", false, "show strobe, switch and skew statistics")
	cf.add(cmd)
	return cmd
}

func writeNodes(w io.Writer, rep api.NodesReport, stats bool) {
	head := []string{"NAME", "STATE", "CPUS", "MEMORY", "COLUMNS", "JOBS", "CONTROLLER"}
	if stats {
		head = append(head, "APPLIED", "LOST", "LATE", "LATENCY p50/p99", "SWITCH p50/p99", "REUSES", "MSGS IN/OUT", "CGROUPS", "SUSPEND")
	}
	rows := [][]string{head}
	for _, n := range rep.Nodes {
		name := n.Name
		role := "-"
		switch {
		case n.Leader:
			name += "*"
			role = "leader"
		case n.Controller:
			role = "standby"
		}
		var jobs []string
		for _, id := range n.Jobs {
			jobs = append(jobs, fmt.Sprint(id))
		}
		mem := "-"
		if n.Memory > 0 {
			mem = humanize.IBytes(uint64(n.Memory))
		}
		r := []string{name, n.State, fmt.Sprint(n.CPUs), mem, columnList(n.Columns), orDash(strings.Join(jobs, ",")), role}
		if stats {
			if s := n.Stats; s != nil {
				st := s.Strobe
				r = append(r, fmt.Sprint(st.Applied), fmt.Sprint(st.Lost), fmt.Sprint(st.Late),
					fmt.Sprintf("%v/%v", roundSig(st.Latency.P50), roundSig(st.Latency.P99)), fmt.Sprintf("%v/%v", roundSig(st.SwitchCost.P50), roundSig(st.SwitchCost.P99)),
					fmt.Sprint(s.SlotReuses), fmt.Sprintf("%d/%d", s.Relay.Delivered, s.Relay.Sent), orDash(s.Cgroups), orDash(s.Suspend))
			} else {
				r = append(r, "-", "-", "-", "-", "-", "-", "-", "-", "-")
			}
		}
		rows = append(rows, r)
	}
	writeColumns(w, rows)
	if stats && rep.Cluster != nil {
		cs := rep.Cluster
		fmt.Fprintf(w, "\n%s mode, MPL %d", cs.Mode, cs.MPL)
		if cs.Mode.TimeShared() {
			t := cs.Ticks
			fmt.Fprintf(w, ", slice %v: %d strobes sent (late p50 %v, p99 %v), %d overruns, %d skipped", cs.Slice.D, t.Ticks, roundSig(t.SendLate.P50), roundSig(t.SendLate.P99), t.Overruns, t.Skipped)
		}
		if cs.Policy != "" {
			fmt.Fprintf(w, "; policy %s", cs.Policy)
			var opts []string
			if cs.Reservations != "" {
				opts = append(opts, "reservations "+cs.Reservations)
			}
			if cs.ReservationMode != "" {
				opts = append(opts, string(cs.ReservationMode))
			}
			if cs.Weights != nil {
				opts = append(opts, "weights "+cs.Weights.String())
			}
			if len(opts) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(opts, ", "))
			}
		}
		fmt.Fprintf(w, "; %d processors in service\n", cs.Online)
		if s := rep.Skew; s != nil && s.Slices > 0 {
			fmt.Fprintf(w, "switch skew across agents over %d slices: p50 %v, p99 %v, max %v; strobe-to-switch p50 %v, p99 %v\n",
				s.Slices, roundSig(s.Skew.P50), roundSig(s.Skew.P99), roundSig(s.Skew.Max), roundSig(s.Latency.P50), roundSig(s.Latency.P99))
		}
	}
	fmt.Fprintln(w, "(* the controller that leads)")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// columnList prints sorted columns compactly: 0-3,8.
func columnList(cols []int) string {
	if len(cols) == 0 {
		return "-"
	}
	var parts []string
	for i := 0; i < len(cols); {
		j := i
		for j+1 < len(cols) && cols[j+1] == cols[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cols[i], cols[j]))
		} else {
			parts = append(parts, fmt.Sprint(cols[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// currentUser is the submitting user's login name as this process knows
// it, for the job's USER column: the account of the real uid, else $USER.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// roundSig rounds a measured duration to three significant digits for a
// table (123µs, 1.23ms, 40s): the digits beyond are noise.
func roundSig(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for a := max(d, -d); a >= 1000*unit; unit *= 10 {
	}
	return d.Round(unit)
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

// usageColumns renders a job's cgroup accounting: CPU, MAXMEM, PROCS.
func usageColumns(u *api.JobUsage) []string {
	if u == nil {
		return []string{"-", "-", "-"}
	}
	return []string{u.CPUTime.D.Round(time.Millisecond).String(), humanize.IBytes(uint64(u.PeakMemory)), fmt.Sprint(u.Processes)}
}
