// Package jobtable renders the job API's jobs and nodes as the CLI's
// Slurm-like tables: squeue's default columns and its %-field formats
// (ParseFormat, WriteFormat), the states squeue -t takes (ParseStates),
// and the agents' table with their statistics (Nodes).
package jobtable

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/bytesize"
	"github.com/cosched/cosched/internal/slurmtime"
)

// Queue writes jobs as squeue does by default: JOBID NAME USER ST TIME
// NODES NODELIST(REASON), aligned; long adds the cgroup accounting (CPU,
// MAXMEM, PROCS).
func Queue(w io.Writer, jobs []api.Job, noHeader, long bool) {
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

// Nodes writes the agents (NAME STATE CPUS MEMORY COLUMNS JOBS
// CONTROLLER), aligned; stats adds each agent's strobe, switch, relay and
// containment statistics and the cluster's lines.
func Nodes(w io.Writer, rep api.NodesReport, stats bool) {
	head := []string{"NAME", "STATE", "CPUS", "MEMORY", "COLUMNS", "JOBS", "CONTROLLER"}
	if stats {
		head = append(head, "APPLIED", "LOST", "LATE", "LATENCY p50/p99", "SWITCH p50/p99", "REUSES", "MSGS IN/OUT", "CGROUPS", "SUSPEND")
	}
	rows := [][]string{head}
	for _, n := range rep.Nodes {
		rows = append(rows, nodeRow(n, stats))
	}
	writeColumns(w, rows)
	if stats && rep.Cluster != nil {
		writeClusterStats(w, rep)
	}
	fmt.Fprintln(w, "(* the controller that leads)")
	if stats {
		writeRelayJobs(w, rep)
	}
}

// nodeRow is one agent's line of nodes (with --stats, its statistics).
func nodeRow(n api.NodeInfo, stats bool) []string {
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
		mem = bytesize.Format(uint64(n.Memory))
	}
	r := []string{name, n.State, fmt.Sprint(n.CPUs), mem, columnList(n.Columns), orDash(strings.Join(jobs, ",")), role}
	if stats {
		if s := n.Stats; s != nil {
			st := s.Strobe
			r = append(r, fmt.Sprint(st.Applied), fmt.Sprint(st.Lost), fmt.Sprint(st.Late),
				fmt.Sprintf("%v/%v", RoundSig(st.Latency.P50), RoundSig(st.Latency.P99)), fmt.Sprintf("%v/%v", RoundSig(st.SwitchCost.P50), RoundSig(st.SwitchCost.P99)),
				fmt.Sprint(s.SlotReuses), fmt.Sprintf("%d/%d", s.Relay.Delivered, s.Relay.Sent), orDash(s.Cgroups), orDash(s.Suspend))
		} else {
			r = append(r, "-", "-", "-", "-", "-", "-", "-", "-", "-")
		}
	}
	return r
}

// writeRelayJobs prints nodes --stats' traffic of each job at each
// agent's relay, if any job has sent or announced anything.
func writeRelayJobs(w io.Writer, rep api.NodesReport) {
	// ON CHANNELS: the part of SENT BYTES that went over same-node
	// channels the relay granted (docs/mpi.md, "Same-node channels").
	rows := [][]string{{"AGENT", "JOB", "SENT", "SENT BYTES", "ON CHANNELS", "DELIVERED", "DELIVERED BYTES", "COLLECTIVES"}}
	for _, n := range rep.Nodes {
		if n.Stats == nil {
			continue
		}
		for _, js := range n.Stats.Relay.Jobs {
			if js.Sent+js.Delivered+js.Collectives == 0 {
				continue
			}
			job := fmt.Sprint(js.Job)
			if js.Ended {
				job += " (ended)"
			}
			rows = append(rows, []string{n.Name, job, fmt.Sprint(js.Sent), bytesize.Format(js.SentBytes), bytesize.Format(js.ChannelBytes), fmt.Sprint(js.Delivered),
				bytesize.Format(js.DeliveredBytes), fmt.Sprint(js.Collectives)})
		}
	}
	if len(rows) == 1 {
		return
	}
	fmt.Fprintln(w, "\nmessages of each job's ranks through each agent's relay:")
	writeColumns(w, rows)
}

// writeClusterStats prints the cluster's lines of nodes --stats: mode,
// strobes, policy, processors and the switch skew.
func writeClusterStats(w io.Writer, rep api.NodesReport) {
	cs := rep.Cluster
	fmt.Fprintf(w, "\n%s mode, MPL %d", cs.Mode, cs.MPL)
	if cs.Mode.TimeShared() {
		t := cs.Ticks
		fmt.Fprintf(w, ", slice %v: %d strobes sent (late p50 %v, p99 %v), %d overruns, %d skipped", cs.Slice.D, t.Ticks, RoundSig(t.SendLate.P50), RoundSig(t.SendLate.P99), t.Overruns, t.Skipped)
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
			s.Slices, RoundSig(s.Skew.P50), RoundSig(s.Skew.P99), RoundSig(s.Skew.Max), RoundSig(s.Latency.P50), RoundSig(s.Latency.P99))
	}
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

// RoundSig rounds a measured duration to three significant digits for a
// table (123µs, 1.23ms, 40s): the digits beyond are noise.
func RoundSig(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for a := max(d, -d); a >= 1000*unit; unit *= 10 {
	}
	return d.Round(unit)
}

// usageColumns renders a job's cgroup accounting: CPU, MAXMEM, PROCS.
func usageColumns(u *api.JobUsage) []string {
	if u == nil {
		return []string{"-", "-", "-"}
	}
	return []string{u.CPUTime.D.Round(time.Millisecond).String(), bytesize.Format(uint64(u.PeakMemory)), fmt.Sprint(u.Processes)}
}

// field is one of squeue's % fields that cosched knows.
type field struct {
	header string
	value  func(j api.Job) string
}

// fields returns the squeue % fields cosched supports (squeue(1)).
func fields() map[byte]field {
	return map[byte]field{
		'i': {"JOBID", func(j api.Job) string { return strconv.FormatInt(j.ID, 10) }},
		'j': {"NAME", jobName},
		'u': {"USER", func(j api.Job) string { return orDash(j.Spec.User) }},
		't': {"ST", func(j api.Job) string { return j.State.Code() }},
		'T': {"STATE", func(j api.Job) string { return string(j.State) }},
		'M': {"TIME", func(j api.Job) string { return slurmtime.Format(j.Elapsed.D) }},
		'l': {"TIME_LIMIT", func(j api.Job) string { return slurmtime.Format(j.Spec.TimeLimit.D) }},
		'D': {"NODES", nodeCount},
		'C': {"CPUS", func(j api.Job) string { return strconv.Itoa(j.Spec.Processors) }},
		'R': {"NODELIST(REASON)", nodesOrReason},
		'N': {"NODELIST", func(j api.Job) string { return strings.Join(distinct(j.Nodes), ",") }},
		'r': {"REASON", func(j api.Job) string { return orDash(j.Reason) }},
		'P': {"PARTITION", func(api.Job) string { return "-" }}, // one partition: the cluster
	}
}

// FieldLetters lists the supported fields for help and errors.
const FieldLetters = "%i %j %u %t %T %M %l %D %C %R %N %r %P"

// Column is one parsed % item of a format: a field, or literal text.
type Column struct {
	literal string
	field   *field
	width   int  // 0: as wide as needed
	right   bool // %.N: right-justified
}

// ParseFormat reads an squeue format: %[.]WIDTH<letter> items and
// literal text. A value longer than its width is cut, as squeue does.
func ParseFormat(s string) ([]Column, error) {
	fields := fields()
	var cols []Column
	for i := 0; i < len(s); {
		if s[i] != '%' {
			j := strings.IndexByte(s[i:], '%')
			if j < 0 {
				j = len(s) - i
			}
			cols = append(cols, Column{literal: s[i : i+j]})
			i += j
			continue
		}
		i++
		var c Column
		if i < len(s) && s[i] == '.' {
			c.right = true
			i++
		} else if i < len(s) && s[i] == '-' { // left, the default, said explicitly
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i > start {
			w, err := strconv.Atoi(s[start:i])
			if err != nil || w > 1000 {
				return nil, fmt.Errorf("width %q: want 0..1000", s[start:i])
			}
			c.width = w
		}
		if i >= len(s) {
			return nil, fmt.Errorf("%q ends inside a %% item (fields: %s)", s, FieldLetters)
		}
		if s[i] == '%' {
			cols = append(cols, Column{literal: "%"})
			i++
			continue
		}
		f, ok := fields[s[i]]
		if !ok {
			return nil, fmt.Errorf("%%%c: unknown field (known: %s)", s[i], FieldLetters)
		}
		c.field = &f
		cols = append(cols, c)
		i++
	}
	return cols, nil
}

// WriteFormat prints jobs with a parsed format, with a header line
// unless noHeader.
func WriteFormat(w io.Writer, cols []Column, jobs []api.Job, noHeader bool) {
	line := func(value func(f *field) string) {
		var b strings.Builder
		for _, c := range cols {
			if c.field == nil {
				b.WriteString(c.literal)
				continue
			}
			b.WriteString(pad(value(c.field), c.width, c.right))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if !noHeader {
		line(func(f *field) string { return f.header })
	}
	for _, j := range jobs {
		line(func(f *field) string { return f.value(j) })
	}
}

// pad fits s to width (0: unchanged): cut if longer, else padded on the
// right (left-justified) or the left (right-justified).
func pad(s string, width int, right bool) string {
	if width == 0 {
		return s
	}
	r := []rune(s)
	if len(r) > width {
		return string(r[:width])
	}
	fill := strings.Repeat(" ", width-len(r))
	if right {
		return fill + s
	}
	return s + fill
}

// jobName is the job's name, else its program, else what a benchmark job
// runs, so NAME is never empty.
func jobName(j api.Job) string {
	switch {
	case j.Spec.Name != "":
		return j.Spec.Name
	case len(j.Spec.Command) > 0:
		return j.Spec.Command[0]
	case j.Spec.Bench != "":
		return "bench:" + j.Spec.Bench
	}
	return "-"
}

func nodeCount(j api.Job) string {
	if j.State == api.Pending {
		return "-"
	}
	return strconv.Itoa(len(distinct(j.Nodes)))
}

func nodesOrReason(j api.Job) string {
	if j.State == api.Pending || j.Reason != "" && j.State.Done() {
		return "(" + j.Reason + ")"
	}
	return strings.Join(distinct(j.Nodes), ",")
}

// ParseStates reads -t/--states: squeue's codes or names, comma-separated,
// or "all".
func ParseStates(s string) (map[api.State]bool, error) {
	all := []api.State{api.Pending, api.Running, api.Completed, api.Failed, api.Cancelled, api.Timeout}
	want := map[api.State]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.ToUpper(strings.TrimSpace(item))
		if item == "ALL" {
			for _, st := range all {
				want[st] = true
			}
			continue
		}
		found := false
		for _, st := range all {
			if item == string(st) || item == st.Code() || st == api.Cancelled && item == "CANCELED" {
				want[st], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("state %q: want PD, R, CD, F, CA, TO (or PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT), or all", item)
		}
	}
	return want, nil
}

// Filter selects jobs as squeue's -j and -t do; a nil set selects every
// job.
type Filter struct {
	IDs    map[int64]bool
	States map[api.State]bool
}

// ParseJobList reads -j/--jobs: job ids, comma-separated.
func ParseJobList(s string) (map[int64]bool, error) {
	ids := map[int64]bool{}
	for _, item := range strings.Split(s, ",") {
		id, err := api.ParseJobID(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, nil
}

// Finished reports whether the filter selects finished jobs, so that they
// must be asked for besides those of all (--all): a job list (squeue -j
// shows a job whatever its state) or a finished state.
func (f Filter) Finished(all bool) bool {
	finished := all || f.IDs != nil
	for st := range f.States {
		finished = finished || st.Done()
	}
	return finished
}

// Keep reports whether j is selected.
func (f Filter) Keep(j api.Job) bool {
	return (f.IDs == nil || f.IDs[j.ID]) && (f.States == nil || f.States[j.State])
}
