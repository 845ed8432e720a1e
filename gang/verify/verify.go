// Package verify checks a scheduler's decisions against its own record of
// the Ousterhout matrix, kept by code that shares nothing with the core's
// bookkeeping. The simulator uses it for `cosched sim --check`, and the
// core's property tests use it on random workloads.
//
// Invariants checked, decision by decision:
//   - a started job was submitted, is not running, and starts no earlier
//     than it was submitted;
//   - it gets exactly as many distinct columns as it has processors, inside
//     the machine, in a row that exists, none of them holding a placed job;
//   - the memory of the jobs placed on a column, summed over rows, never
//     exceeds the column's memory, and no job starts on a column out of
//     service;
//   - an alternate is on the job's own columns, in another row, on slots
//     that hold no placed job and no other alternate;
//   - only running jobs are killed, alternated or finished.
//
// A batch of decisions (one Schedule call) may place a job on a slot whose
// alternate ends in the same batch; the core orders batches so that the
// AlternateEnd comes first, and the checker holds it to that order.
package verify

import (
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/idtable"
	"github.com/cosched/cosched/internal/sizepool"
)

// job is what the checker needs of a job: not the whole gang.Job, whose
// strings (user, template) make a copy into a record on the heap several
// times as dear (write barriers), once per submitted job.
type job struct {
	ID         gang.JobID
	Submit     time.Duration
	Processors int
	Memory     int64
	running    bool
	row        int
	cols       []int
	alts       []int // rows
}

// Checker is an independent record of the matrix. It allocates nothing
// per decision once warm (a simulation checks every one): finished jobs'
// records are reused, a start's duplicate columns are found by stamping
// them, not with a set, and jobs are found by ID in a table indexed by it
// (idtable), not a map.
type Checker struct {
	machine gang.Machine
	placed  [][]gang.JobID // row → column → placed job (0: none)
	alt     [][]gang.JobID // row → column → alternate job (0: none)
	mem     []int64        // column → memory of placed jobs
	offline []bool         // column → out of service
	jobs    idtable.Table[gang.JobID, job]
	spare   []*job             // finished jobs' records, for reuse
	colPool sizepool.Pool[int] // finished jobs' column copies, for reuse by size
	seen    []uint64           // column → the last start that named it
	starts  uint64             // starts checked: the stamp of the current one
	// plain: no column has gone out of service and no alternate has been
	// placed, so far. Those checks are then vacuous, and a start on
	// ascending columns (the core's) is checked and placed in one loop
	// (placeAscending); anything else gets the whole check.
	plain bool
}

// New returns a Checker for a machine with mpl rows.
func New(m gang.Machine, mpl int) *Checker {
	c := &Checker{machine: m, mem: make([]int64, m.Processors), offline: make([]bool, m.Processors), seen: make([]uint64, m.Processors), plain: true}
	c.placed = make([][]gang.JobID, mpl)
	c.alt = make([][]gang.JobID, mpl)
	for r := range c.placed {
		c.placed[r] = make([]gang.JobID, m.Processors)
		c.alt[r] = make([]gang.JobID, m.Processors)
	}
	return c
}

// Submitted records a job given to the scheduler.
func (c *Checker) Submitted(j gang.Job) error {
	if c.jobs.Get(j.ID) != nil {
		return fmt.Errorf("verify: job %d submitted twice", j.ID)
	}
	var r *job
	if n := len(c.spare); n > 0 {
		r, c.spare = c.spare[n-1], c.spare[:n-1]
		// Field by field: a job literal naming r.alts is built aside and
		// copied in. Finished left cols nil.
		r.ID, r.Submit, r.Processors, r.Memory = j.ID, j.Submit, j.Processors, j.Memory
		r.running, r.row, r.alts = false, 0, r.alts[:0]
	} else {
		r = &job{ID: j.ID, Submit: j.Submit, Processors: j.Processors, Memory: j.Memory}
	}
	c.jobs.Put(j.ID, r)
	return nil
}

// Apply checks one decision made at now and records its effect.
func (c *Checker) Apply(d *gang.Decision, now time.Duration) error {
	j := c.jobs.Get(d.Job)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("verify: at %v, %v: %s", now, d.Kind, fmt.Sprintf(format, args...))
	}
	if j == nil {
		return fail("job %d is unknown", d.Job)
	}
	if d.Row < 0 || d.Row >= len(c.placed) {
		return fail("job %d: row %d outside the matrix (%d rows)", d.Job, d.Row, len(c.placed))
	}
	switch d.Kind {
	case gang.Start:
		return c.start(j, d, now, fail)
	case gang.Alternate:
		if !j.running {
			return fail("job %d is not running", d.Job)
		}
		if d.Row == j.row {
			return fail("job %d alternates in its own row %d", d.Job, d.Row)
		}
		if !sameColumns(d.Columns, j.cols) {
			return fail("job %d alternates on columns %v, its own are %v", d.Job, d.Columns, j.cols)
		}
		for _, col := range j.cols {
			if p := c.placed[d.Row][col]; p != 0 {
				return fail("job %d alternates on row %d column %d, where job %d is placed", d.Job, d.Row, col, p)
			}
			if a := c.alt[d.Row][col]; a != 0 {
				return fail("job %d alternates on row %d column %d, already used by job %d's alternate", d.Job, d.Row, col, a)
			}
		}
		c.plain = false
		for _, col := range j.cols {
			c.alt[d.Row][col] = j.ID
		}
		j.alts = append(j.alts, d.Row)
	case gang.AlternateEnd:
		if !removeRow(&j.alts, d.Row) {
			return fail("job %d has no alternate in row %d", d.Job, d.Row)
		}
		for _, col := range j.cols {
			c.alt[d.Row][col] = 0
		}
	case gang.Kill, gang.Preempt, gang.Resume:
		if !j.running {
			return fail("job %d is not running", d.Job)
		}
	default:
		return fail("unknown decision kind")
	}
	return nil
}

func (c *Checker) start(j *job, d *gang.Decision, now time.Duration, fail func(string, ...any) error) error {
	if j.running {
		return fail("job %d is already running", d.Job)
	}
	if now < j.Submit {
		return fail("job %d starts at %v, before its submission at %v", d.Job, now, j.Submit)
	}
	if len(d.Columns) != j.Processors {
		return fail("job %d gets %d columns for %d processors", d.Job, len(d.Columns), j.Processors)
	}
	// The row's tables resliced to the machine once: the loops below run
	// for every column of every start, without bounds checks.
	procs := c.machine.Processors
	placed := c.placed[d.Row][:procs]
	memCap := c.machine.MemoryPerProcessor
	if !c.plain || memCap > 0 || !placeAscending(j.ID, d.Columns, placed) {
		c.starts++
		alt := c.alt[d.Row][:procs]
		seen, offline, mem := c.seen[:procs], c.offline[:procs], c.mem[:procs]
		for _, col := range d.Columns {
			if uint(col) >= uint(procs) {
				return fail("job %d: column %d outside the machine (%d processors)", d.Job, col, procs)
			}
			if seen[col] == c.starts {
				return fail("job %d gets column %d twice", d.Job, col)
			}
			seen[col] = c.starts
			if p := placed[col]; p != 0 {
				return fail("job %d: row %d column %d already holds job %d", d.Job, d.Row, col, p)
			}
			if offline[col] {
				return fail("job %d: column %d is out of service", d.Job, col)
			}
			if a := alt[col]; a != 0 {
				return fail("job %d: row %d column %d is still job %d's alternate (end it first)", d.Job, d.Row, col, a)
			}
			if memCap > 0 && mem[col]+j.Memory > memCap {
				return fail("job %d: column %d would hold %d bytes, it has %d", d.Job, col, mem[col]+j.Memory, memCap)
			}
		}
		for _, col := range d.Columns {
			placed[col] = j.ID
		}
	}
	if j.Memory != 0 { // most workloads give none
		for _, col := range d.Columns {
			c.mem[col] += j.Memory
		}
	}
	if j.cols == nil && len(d.Columns) > 0 {
		j.cols = c.colPool.Get(len(d.Columns))
	}
	j.running, j.row, j.cols = true, d.Row, append(j.cols[:0], d.Columns...) // a copy: the core's slice is not ours
	return nil
}

// placeAscending places job id on cols in placed (a row's) if they are
// ascending (so none is named twice), inside it and free there, and
// reports whether it did; if not, it leaves placed as it was. With no
// column offline, no alternate and no memory bound, these are all a
// start's column checks, in one loop rather than two.
func placeAscending(id gang.JobID, cols []int, placed []gang.JobID) bool {
	prev := -1
	for i, col := range cols {
		if col <= prev || col >= len(placed) || placed[col] != 0 {
			for _, c := range cols[:i] {
				placed[c] = 0 // free before: checked
			}
			return false
		}
		placed[col] = id
		prev = col
	}
	return true
}

// SetOffline records columns leaving (or returning to) service: no job
// may start on an offline column.
func (c *Checker) SetOffline(cols []int, offline bool) {
	for _, col := range cols {
		if col >= 0 && col < len(c.offline) {
			c.offline[col] = offline
			if offline {
				c.plain = false
			}
		}
	}
}

// Finished records that a job ended (queued or running) and releases all
// it held.
func (c *Checker) Finished(id gang.JobID) error {
	j := c.jobs.Get(id)
	if j == nil {
		return fmt.Errorf("verify: finished job %d is unknown", id)
	}
	c.jobs.Delete(id)
	if j.running {
		placed := c.placed[j.row]
		for _, col := range j.cols {
			placed[col] = 0
		}
		if j.Memory != 0 || len(j.alts) > 0 { // most jobs have neither
			for _, col := range j.cols {
				if j.Memory != 0 {
					c.mem[col] -= j.Memory
				}
				for _, r := range j.alts {
					c.alt[r][col] = 0
				}
			}
		}
	}
	c.colPool.Put(j.cols)
	j.cols = nil
	c.spare = append(c.spare, j)
	return nil
}

// Running returns the processors held by placed jobs in each row.
func (c *Checker) Running() []int {
	used := make([]int, len(c.placed))
	for r, row := range c.placed {
		for _, id := range row {
			if id != 0 {
				used[r]++
			}
		}
	}
	return used
}

func sameColumns(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func removeRow(rows *[]int, r int) bool {
	for i, x := range *rows {
		if x == r {
			*rows = append((*rows)[:i], (*rows)[i+1:]...)
			return true
		}
	}
	return false
}
