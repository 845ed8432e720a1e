package main

import (
	"errors"
	"fmt"
	"github.com/cosched/cosched/jss"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/node"
)

func newSubmitCmd() *cobra.Command {
	var cf clientFlags
	var spec node.JobSpec
	var limit, mem string
	var parsable bool
	var benchRuntime time.Duration
	cmd := &cobra.Command{
		Use:   "submit -n PROCS -t LIMIT [flags] -- COMMAND [ARGS...]  |  submit -n PROCS --bench G,V,COMM,SYNC --runtime D",
		Short: "Submit a job: COMMAND runs once per rank, one rank per processor",
		Long: `Submit a parallel job. COMMAND runs once per rank with COSCHED_JOB, COSCHED_RANK,
COSCHED_SIZE and COSCHED_NODE in its environment; its output goes to
<state dir>/agents/<agent>/jobs/<id>/rank-<rank>.{out,err} on the agent that
ran it. The time limit is the job's runtime estimate (backfilling uses it); a
job still running at its limit is killed (TIMEOUT; --overrun extend lets it
run on) — under gang scheduling the limit counts wall time dilated by the MPL.

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
		Example: `  cosched submit -n 8 -t 10m -- ./solver input.dat
  cosched submit -n 4 -t 30s --name spin --parsable -- sh -c 'while :; do :; done'
  cosched submit -n 8 -t 5m --mpi pmi1 -- ./a.out
  cosched submit -n 8 --bench 50ms,25ms,news,NB --runtime 20s
  cosched submit -n 4 --bench 100,50,transpose,B --iterations 200 --work wall`,
		RunE: func(cmd *cobra.Command, args []string) error {
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
			if _, err := node.ParseMPI(spec.MPI); err != nil {
				errs = append(errs, fmt.Errorf("--mpi: %v", err))
			}
			if spec.Processors < 1 {
				errs = append(errs, fmt.Errorf("-n %d: must be at least 1", spec.Processors))
			}
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
			d, err := time.ParseDuration(limit)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("-t %q: want a positive duration (e.g. 10m)", limit))
			}
			spec.TimeLimit = node.Duration{D: d}
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
	fl.IntVarP(&spec.Processors, "procs", "n", 1, "processors (ranks)")
	fl.StringVarP(&limit, "time", "t", "", "time limit, the runtime estimate (e.g. 10m)")
	fl.StringVar(&spec.Name, "name", "", "job name")
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
	var all, long bool
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List jobs (squeue-like): JOBID NAME USER ST TIME NODES NODELIST(REASON)",
		Long: `List pending and running jobs (--all: finished ones too). ST is the state:
PD pending, R running, CD completed, F failed, CA cancelled, TO timeout. TIME
is the time the job has run. For a pending job the last column says why it
waits; for a failed one why it failed. --long adds the accounting the agents
read from the jobs' cgroups once a job's ranks end: CPU time, peak memory
(the largest node's) and the most processes seen at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			jobs, err := c.Jobs(cmd.Context(), all)
			if err != nil {
				return err
			}
			writeQueue(cmd.OutOrStdout(), jobs, long)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include finished jobs")
	cmd.Flags().BoolVarP(&long, "long", "l", false, "add CPU time, peak memory and processes (from the jobs' cgroups)")
	cf.add(cmd)
	return cmd
}

func writeQueue(w io.Writer, jobs []node.Job, long bool) {
	head := []string{"JOBID", "NAME", "USER", "ST", "TIME", "NODES"}
	if long {
		head = append(head, "CPU", "MAXMEM", "PROCS")
	}
	rows := [][]string{append(head, "NODELIST(REASON)")}
	for _, j := range jobs {
		nodes := distinct(j.Nodes)
		last := strings.Join(nodes, ",")
		if j.State == node.Pending || j.Reason != "" && j.State.Done() {
			last = "(" + j.Reason + ")"
		}
		name := j.Spec.Name
		if name == "" && len(j.Spec.Command) > 0 {
			name = j.Spec.Command[0]
		}
		count := fmt.Sprint(len(nodes))
		if j.State == node.Pending {
			count = "-"
		}
		user := "?"
		if j.Spec.Owner != nil {
			user = j.Spec.Owner.User
		}
		r := []string{fmt.Sprint(j.ID), truncate(name, 16), truncate(user, 12), j.State.Code(), squeueTime(j.Elapsed.D), count}
		if long {
			r = append(r, usageColumns(j.Usage)...)
		}
		rows = append(rows, append(r, last))
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

// squeueTime formats a duration as squeue does: M:SS, H:MM:SS, D-HH:MM:SS.
func squeueTime(d time.Duration) string {
	s := int64(d / time.Second)
	days, h, m, sec := s/86400, s/3600%24, s/60%60, s%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, sec)
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
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
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ids []int64
			var errs []error
			for _, a := range args {
				id, err := node.ParseJobID(a)
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
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Cancelled job %d\n", id)
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

func writeNodes(w io.Writer, rep node.NodesReport, stats bool) {
	head := []string{"NAME", "STATE", "CPUS", "MEMORY", "COLUMNS", "JOBS"}
	if stats {
		head = append(head, "APPLIED", "LOST", "LATE", "LATENCY p50/p99", "SWITCH p50/p99", "REUSES", "MSGS IN/OUT", "CGROUPS", "SUSPEND")
	}
	rows := [][]string{head}
	for _, n := range rep.Nodes {
		name := n.Name
		if n.Controller {
			name += "*"
		}
		var jobs []string
		for _, id := range n.Jobs {
			jobs = append(jobs, fmt.Sprint(id))
		}
		mem := "-"
		if n.Memory > 0 {
			mem = humanize.IBytes(uint64(n.Memory))
		}
		r := []string{name, n.State, fmt.Sprint(n.CPUs), mem, columnList(n.Columns), orDash(strings.Join(jobs, ","))}
		if stats {
			if s := n.Stats; s != nil {
				st := s.Strobe
				r = append(r, fmt.Sprint(st.Applied), fmt.Sprint(st.Lost), fmt.Sprint(st.Late),
					fmt.Sprintf("%v/%v", st.Latency.P50, st.Latency.P99), fmt.Sprintf("%v/%v", st.SwitchCost.P50, st.SwitchCost.P99),
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
			fmt.Fprintf(w, ", slice %v: %d strobes sent (late p50 %v, p99 %v), %d overruns, %d skipped", cs.Slice.D, t.Ticks, t.SendLate.P50, t.SendLate.P99, t.Overruns, t.Skipped)
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
				s.Slices, s.Skew.P50, s.Skew.P99, s.Skew.Max, s.Latency.P50, s.Latency.P99)
		}
	}
	fmt.Fprintln(w, "(* the controller)")
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

// usageColumns renders a job's cgroup accounting: CPU, MAXMEM, PROCS.
func usageColumns(u *node.JobUsage) []string {
	if u == nil {
		return []string{"-", "-", "-"}
	}
	return []string{u.CPUTime.D.Round(time.Millisecond).String(), humanize.IBytes(uint64(u.PeakMemory)), fmt.Sprint(u.Processes)}
}
