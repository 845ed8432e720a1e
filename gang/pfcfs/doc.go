// Package pfcfs is preemptive first-come-first-serve scheduling with gang
// scheduling for wide jobs (PFCFS, after Schwiegelshohn and Yahyapour,
// "Improving first-come-first-serve job scheduling by gang scheduling",
// JSSPP 1998).
//
// It is a scheduler core like gang.Scheduler, and as pure: no clock, no I/O,
// no goroutines, no randomness. Callers feed it events with an explicit now
// and carry out the decisions it returns, in order:
//
//	s, err := pfcfs.New(cfg)
//	err = s.Submit(job, now)    // a job arrives
//	err = s.Finished(id, now)   // a job ended (or was cancelled)
//	ds, err := s.Schedule(now)  // []gang.Decision: Start, Preempt, Resume
//	t, ok := s.NextWakeup()     // a start delay or a context switch is due
//
// The calling order at an instant is gang's: every ended job, then every
// arrival, then one Schedule. The machine is one row of Processors columns
// (space sharing); a Preempt decision stops a job, which keeps its columns,
// and a Resume continues it on the same columns (no migration). The core
// never sees runtimes: the caller tracks what a preempted job has left to do
// (the simulator also charges a penalty per preemption there).
//
// # Rules
//
// A job is wide when it needs at least WidePercent % of the machine, narrow
// otherwise.
//
//   - Queue: one queue in arrival order. The first queued job starts as soon
//     as enough columns are free (the lowest free ones); no job passes it.
//     Narrow jobs are never preempted except by a wide job, as below.
//   - Preemption: the first queued job, if wide, preempts running jobs when
//     (a) it is first in the queue, (b) no earlier wide job is active
//     (started and not ended) and (c) Delay has passed since both (a) and
//     (b) became true, and it still does not fit.
//   - Greedy choice: it needs r = its size − free columns more. While r > 0:
//     if some running job has at least r processors, the smallest such job
//     is preempted (best fit) and the choice ends; otherwise the largest
//     running job is preempted and r shrinks by its size. Ties go to the job
//     that arrived last. This preempts as few jobs as possible (no smaller
//     set covers r) and wastes little on the last pick. The wide job takes
//     the preempted jobs' columns, in the order they were picked, then the
//     lowest free columns, up to its size; preempted columns it does not
//     take stay with their job and idle while it is stopped. Only one wide
//     job preempts at a time, so no column ever holds more than one
//     preempted job.
//   - Alternation: the preemption is the first context switch. Every Switch
//     after it, while fewer than Switches context switches have happened
//     and both sides still have work, the running side is preempted and the
//     other resumed. With an odd Switches the wide job holds the machine
//     after the last switch and runs to completion; with an even one the
//     preempted jobs do. When one side completes (the wide job, or the last
//     of the preempted jobs), the other resumes at once, and the episode
//     ends.
//   - Columns free up when the job holding them ends; a column held by a
//     preempted job or by the wide job is not free, so queued jobs start
//     beside an episode only on columns neither side holds.
//
// Memory is not modelled: a job's Memory is ignored.
package pfcfs
