package jobtable

import (
	"cmp"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/bytesize"
)

// Show writes every field of a job as `scontrol show job` does: Name=Value
// pairs, a few to a line, the first line unindented. Times are local,
// Slurm's YYYY-MM-DDTHH:MM:SS ("Unknown" before they happen); ExitCode is
// the highest exit status of its ranks and, after a colon, the signal that
// ended one ("0" for none), as scontrol's code:signal.
func Show(w io.Writer, j api.Job) {
	s := j.Spec
	reason := cmp.Or(j.Reason, "None")
	mpi := cmp.Or(s.MPI, api.MPINone)
	if s.Bench != "" {
		mpi = "comm (benchmark " + s.Bench + ")"
	}
	command := strings.Join(s.Command, " ")
	if s.Bench != "" {
		command = "bench-rank " + s.Bench
	}
	overrun := cmp.Or(s.Overrun, "kill")
	mem := "0"
	if s.Memory > 0 {
		mem = bytesize.Format(uint64(s.Memory))
	}
	lines := [][]string{
		{"JobId=" + strconv.FormatInt(j.ID, 10), "JobName=" + jobName(j)},
		{"UserId=" + userID(s.Owner, s.User), "GroupId=" + groupID(s.Owner)},
		{"JobState=" + string(j.State), "Reason=" + strings.ReplaceAll(reason, "\n", " "), "ExitCode=" + exitCode(j)},
		{"RunTime=" + hms(j.Elapsed.D), "TimeLimit=" + hms(s.TimeLimit.D), "TimeUsed=" + used(j), "OverTimeLimit=" + overrun},
		{"SubmitTime=" + showTime(&j.Submit), "StartTime=" + showTime(j.Start), "EndTime=" + showTime(j.End)},
		{"NumNodes=" + nodeCount(j), "NumTasks=" + strconv.Itoa(s.Processors), "NodeList=" + orNull(strings.Join(distinct(j.Nodes), ","))},
		{"MinMemoryCPU=" + mem, "MPI=" + mpi},
		{"Command=" + command},
		{"WorkDir=" + orNull(s.Dir)},
	}
	for i, l := range lines {
		if i > 0 {
			io.WriteString(w, "   ")
		}
		fmt.Fprintln(w, strings.Join(l, " "))
	}
}

// exitCode is scontrol's ExitCode, code:signal: the highest exit status
// of the job's ranks, and the signal that killed one (0: none).
func exitCode(j api.Job) string {
	code, sig := 0, "0"
	for _, r := range j.Ranks {
		code = max(code, r.Code)
		if r.Signal != "" && sig == "0" {
			sig = r.Signal
		}
	}
	return fmt.Sprintf("%d:%s", code, sig)
}

// used is how much of its time limit a started job has run, in percent of
// the wall time since it started (under time sharing a job may run
// longer than its limit: see cosched submit --help).
func used(j api.Job) string {
	if j.Start == nil || j.Spec.TimeLimit.D <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*j.Elapsed.D.Seconds()/j.Spec.TimeLimit.D.Seconds())
}

// hms is a duration as scontrol writes it: [D-]HH:MM:SS.
func hms(d time.Duration) string {
	s := int64(d / time.Second)
	if days := s / 86400; days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, s/3600%24, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
}

func showTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "Unknown"
	}
	return t.Local().Format("2006-01-02T15:04:05")
}

func userID(o *api.Owner, user string) string {
	if o == nil {
		return orNull(user) + "(unknown)"
	}
	return fmt.Sprintf("%s(%d)", cmp.Or(o.User, user), o.UID)
}

func groupID(o *api.Owner) string {
	if o == nil {
		return "(unknown)"
	}
	// The controller's name for the group first: it resolves names through
	// the cluster's NSS, which this (statically linked) client does not.
	name := o.Group
	if name == "" {
		name = strconv.FormatUint(uint64(o.GID), 10)
		if g, err := user.LookupGroupId(name); err == nil {
			name = g.Name
		}
	}
	return fmt.Sprintf("%s(%d)", name, o.GID)
}

func orNull(s string) string { return cmp.Or(s, "(null)") }
