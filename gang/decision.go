package gang

import (
	"fmt"
	"time"
)

// Kind is what a Decision asks the caller to do.
type Kind uint8

// Decision kinds. The values are part of recorded event logs: append only.
const (
	// Start: run the job on Row, Columns. The job holds those columns until
	// the caller reports Finished.
	Start Kind = iota + 1
	// Preempt: stop the job and release nothing; it keeps its columns.
	Preempt
	// Resume: continue a preempted job.
	Resume
	// Kill: end the job (its time limit is reached). The caller still reports
	// Finished once the job is gone.
	Kill
	// Alternate: a running job also runs in Row's slices, on its own
	// Columns, which are empty in that row (alternative scheduling).
	Alternate
	// AlternateEnd: the job no longer runs in Row's slices (a job was placed
	// on those columns, or another job took the slot).
	AlternateEnd
)

func (k Kind) String() string {
	switch k {
	case Start:
		return "start"
	case Preempt:
		return "preempt"
	case Resume:
		return "resume"
	case Kill:
		return "kill"
	case Alternate:
		return "alternate"
	case AlternateEnd:
		return "alternate-end"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Decision is one action the core asks its caller to carry out.
type Decision struct {
	Kind Kind
	Job  JobID
	// Row and Columns place a started job in the matrix.
	Row     int
	Columns []int
	// Why is the rule that produced the decision.
	Why Explanation
}

func (d Decision) String() string {
	switch d.Kind {
	case Start:
		return fmt.Sprintf("start %d row %d cols %s: %s", d.Job, d.Row, columnRanges(d.Columns), d.Why)
	case Alternate, AlternateEnd:
		return fmt.Sprintf("%s %d row %d cols %s: %s", d.Kind, d.Job, d.Row, columnRanges(d.Columns), d.Why)
	}
	return fmt.Sprintf("%s %d: %s", d.Kind, d.Job, d.Why)
}

// Rule names why the core decided something, or why a job waits.
type Rule uint8

// Rules. The values are part of recorded event logs: append only.
const (
	RuleNone Rule = iota
	// Reasons to start a job.
	RuleFits            // first in queue order and enough processors are free
	RuleBackfillShadow  // backfilled: ends, by its estimate, by the head's reservation
	RuleBackfillExtra   // backfilled: uses only processors still spare at the head's reservation
	RuleReservationDue  // conservative: its reservation is reached
	RuleLimitReached    // kill: the job has run for its estimate
	RuleNoRoom          // waits: it is next, but too few processors are free
	RuleBehindHead      // waits: fcfs lets no job pass the queue head
	RuleWouldDelayHead  // waits: starting it now would delay the head's reservation
	RuleTooFewFree      // waits: fewer free processors now than it needs
	RuleReservedLater   // waits: its reservation lies in the future
	RuleNotQueued       // the job is not waiting (unknown, running or ended)
	RuleReservationLate // waits: its reservation is due but a job overran its estimate
	RuleNoMemory        // waits: enough free processors in a row, but too little memory on them
	RuleAlternateFree   // alternate: its columns are empty in that row
	RuleAlternateTaken  // alternate ends: its columns in that row were taken
	RuleNoCapacity      // waits aside: wider than the columns in service (nodes are down)
	// Preemptive FCFS (package gang/pfcfs).
	RuleWidePreempts  // start: a wide job preempted running jobs to get its processors
	RuleSwitch        // preempt/resume: the time between context switches has passed
	RuleOtherSideDone // resume: the other side of a preemption completed
	RuleWideDelay     // waits: a wide job next in line, preempting after the start delay
	RuleEarlierWide   // waits: a wide job next in line, behind an earlier wide job still active
	RulePreemptedBy   // preempt: a wide job takes this job's processors
)

func (r Rule) String() string {
	switch r {
	case RuleNone:
		return "none"
	case RuleFits:
		return "fits"
	case RuleBackfillShadow:
		return "backfill-before-shadow"
	case RuleBackfillExtra:
		return "backfill-extra-processors"
	case RuleReservationDue:
		return "reservation-due"
	case RuleLimitReached:
		return "limit-reached"
	case RuleNoRoom:
		return "no-room"
	case RuleBehindHead:
		return "behind-head"
	case RuleWouldDelayHead:
		return "would-delay-head"
	case RuleTooFewFree:
		return "too-few-free"
	case RuleReservedLater:
		return "reserved-later"
	case RuleNotQueued:
		return "not-queued"
	case RuleReservationLate:
		return "reservation-late"
	case RuleNoMemory:
		return "no-memory"
	case RuleAlternateFree:
		return "alternate-free"
	case RuleAlternateTaken:
		return "alternate-taken"
	case RuleNoCapacity:
		return "no-capacity"
	case RuleWidePreempts:
		return "wide-preempts"
	case RuleSwitch:
		return "switch"
	case RuleOtherSideDone:
		return "other-side-done"
	case RuleWideDelay:
		return "wide-delay"
	case RuleEarlierWide:
		return "earlier-wide"
	case RulePreemptedBy:
		return "preempted-by-wide"
	}
	return fmt.Sprintf("rule(%d)", uint8(r))
}

// Explanation records the facts behind a decision or a wait. Fields that do
// not apply to the rule are zero.
type Explanation struct {
	Rule Rule
	// Procs is the job's size; Free the free processors when it was judged.
	Procs, Free int
	// At is the relevant instant: the head's shadow time (backfilling), the
	// job's reservation (conservative), or its end by estimate.
	At time.Duration
	// Extra is the number of processors spare at the shadow time.
	Extra int
	// Head is the job whose reservation constrains this one.
	Head JobID
}

// rounded is d as a person reads it in a reason: whole seconds from a
// second on (40s, 2m3s), else milliseconds, else microseconds.
func rounded(d time.Duration) time.Duration {
	switch a := max(d, -d); {
	case a >= time.Second:
		return d.Round(time.Second)
	case a >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

func (e Explanation) String() string {
	switch e.Rule {
	case RuleFits:
		return fmt.Sprintf("fits: needs %d, %d free", e.Procs, e.Free)
	case RuleBackfillShadow:
		return fmt.Sprintf("backfilled: ends by %v, the reservation of job %d", rounded(e.At), e.Head)
	case RuleBackfillExtra:
		return fmt.Sprintf("backfilled: needs %d of the %d processors spare at job %d's reservation (%v)", e.Procs, e.Extra, e.Head, rounded(e.At))
	case RuleReservationDue:
		return fmt.Sprintf("reservation reached at %v", rounded(e.At))
	case RuleLimitReached:
		return fmt.Sprintf("time limit reached at %v", rounded(e.At))
	case RuleNoRoom:
		return fmt.Sprintf("next in line: needs %d processors, %d free; enough are expected free at %v", e.Procs, e.Free, rounded(e.At))
	case RuleBehindHead:
		return fmt.Sprintf("behind job %d, which does not fit yet (fcfs lets no job pass)", e.Head)
	case RuleWouldDelayHead:
		return fmt.Sprintf("would delay job %d's reservation at %v (needs %d, %d spare then)", e.Head, rounded(e.At), e.Procs, e.Extra)
	case RuleTooFewFree:
		return fmt.Sprintf("needs %d processors, %d free", e.Procs, e.Free)
	case RuleReservedLater:
		return fmt.Sprintf("reserved to start at %v", rounded(e.At))
	case RuleNotQueued:
		return "not queued"
	case RuleReservationLate:
		return fmt.Sprintf("reservation at %v is due, but it needs %d processors and %d are free (a running job overran its estimate)", rounded(e.At), e.Procs, e.Free)
	case RuleNoMemory:
		return fmt.Sprintf("enough free processors (%d), but too little memory left on them", e.Procs)
	case RuleAlternateFree:
		return "its columns are empty in this row"
	case RuleAlternateTaken:
		return "its columns in this row were taken"
	case RuleNoCapacity:
		return fmt.Sprintf("needs %d processors, only %d in service (nodes are down): waits aside", e.Procs, e.Free)
	case RuleWidePreempts:
		return fmt.Sprintf("wide job preempted running jobs: needs %d, %d were free", e.Procs, e.Free)
	case RuleSwitch:
		return fmt.Sprintf("context switch at %v", rounded(e.At))
	case RuleOtherSideDone:
		return fmt.Sprintf("the other side of the preemption completed at %v", rounded(e.At))
	case RuleWideDelay:
		return fmt.Sprintf("wide job next in line: needs %d processors, %d free; preempts at %v", e.Procs, e.Free, rounded(e.At))
	case RuleEarlierWide:
		return fmt.Sprintf("wide job next in line: needs %d processors, %d free; may not preempt while wide job %d is active", e.Procs, e.Free, e.Head)
	case RulePreemptedBy:
		return fmt.Sprintf("preempted by wide job %d", e.Head)
	}
	return e.Rule.String()
}

// columnRanges prints sorted columns compactly: "0-3,8,10-11".
func columnRanges(cols []int) string {
	out := make([]byte, 0, 16)
	for i := 0; i < len(cols); {
		j := i
		for j+1 < len(cols) && cols[j+1] == cols[j]+1 {
			j++
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = fmt.Appendf(out, "%d", cols[i])
		if j > i {
			out = fmt.Appendf(out, "-%d", cols[j])
		}
		i = j + 1
	}
	return string(out)
}
