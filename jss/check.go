package jss

import (
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
)

// checker keeps its own record of which job holds each matrix slot, so the
// core's decisions are verified by code that shares nothing with it.
type slot struct {
	row  int
	cols []int
}

type checker struct {
	procs int
	rows  [][]gang.JobID // row → column → holder (0 = free)
	held  map[gang.JobID]slot
	used  []int // processors in use per row
}

func newChecker(procs, mpl int) *checker {
	c := &checker{procs: procs, rows: make([][]gang.JobID, mpl), used: make([]int, mpl), held: map[gang.JobID]slot{}}
	for i := range c.rows {
		c.rows[i] = make([]gang.JobID, procs)
	}
	return c
}

func (c *checker) started(d *gang.Decision, j *Job, at time.Duration) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("jss: invariant violated at %v: job %d: %s", at, j.Number, fmt.Sprintf(format, args...))
	}
	if at < j.Submit {
		return fail("started at %v before its submission at %v", at, j.Submit)
	}
	if d.Row < 0 || d.Row >= len(c.rows) {
		return fail("row %d outside the matrix (%d rows)", d.Row, len(c.rows))
	}
	if len(d.Columns) != j.Processors {
		return fail("given %d columns for %d processors", len(d.Columns), j.Processors)
	}
	row := c.rows[d.Row]
	for _, col := range d.Columns {
		if col < 0 || col >= c.procs {
			return fail("column %d outside the machine (%d processors)", col, c.procs)
		}
		if holder := row[col]; holder != 0 {
			return fail("column %d of row %d is already held by job %d", col, d.Row, holder)
		}
		row[col] = d.Job
	}
	c.used[d.Row] += len(d.Columns)
	if c.used[d.Row] > c.procs {
		return fail("running jobs use %d of %d processors", c.used[d.Row], c.procs)
	}
	c.held[d.Job] = slot{row: d.Row, cols: d.Columns}
	return nil
}

func (c *checker) finished(id gang.JobID) {
	h, ok := c.held[id]
	if !ok {
		return
	}
	delete(c.held, id)
	for _, col := range h.cols {
		c.rows[h.row][col] = 0
	}
	c.used[h.row] -= len(h.cols)
}
