package gang

import (
	"math/bits"
	"time"
)

// This file holds the Ousterhout matrix mechanics that every policy shares:
// where a job fits (processors and memory), time dilation of estimates,
// job-level alternative scheduling and row rotation.

// span is how long a job is expected to hold its slot: its estimate,
// dilated by MPL when rows time-share the machine (each row gets at least
// 1/MPL of the time). With MPL 1 it is the estimate.
func (s *Scheduler) span(j *jobState) time.Duration {
	return j.Estimate * time.Duration(s.cfg.MPL)
}

// memoryBound reports whether column memory constrains placement of j.
func (s *Scheduler) memoryBound(j *jobState) bool {
	return j.Memory > 0 && (s.cfg.Machine.MemoryPerProcessor > 0 || s.capped > 0)
}

// fits reports whether j can start in row r now: enough free columns there
// that also have room for its memory, summed over every row resident on
// the column (job access control by memory).
func (s *Scheduler) fits(j *jobState, r int) bool {
	if s.rows[r].cols.free < j.Processors {
		return false
	}
	if !s.memoryBound(j) {
		return true
	}
	return s.memoryColumns(j, r, false) >= j.Processors
}

// memoryColumns counts (or, with take, allocates) the lowest free columns
// of row r that have room for j's memory, up to j.Processors of them.
func (s *Scheduler) memoryColumns(j *jobState, r int, take bool) int {
	set := &s.rows[r].cols
	n := 0
	var picked []int
	for w, word := range set.words {
		for word != 0 && n < j.Processors {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			col := w*64 + b
			if mem := s.columnMemory(col); mem == 0 || s.colMem[col]+j.Memory <= mem {
				n++
				if take {
					picked = append(picked, col)
				}
			}
		}
	}
	if take {
		set.takeThese(picked)
		j.cols = picked
	}
	return n
}

// firstFit returns the first row (in row order) where j fits now.
func (s *Scheduler) firstFit(j *jobState) (int, bool) {
	for r := range s.rows {
		if s.fits(j, r) {
			return r, true
		}
	}
	return 0, false
}

// anyFree reports whether some row has a free column.
func (s *Scheduler) anyFree() bool {
	for r := range s.rows {
		if s.rows[r].cols.free > 0 {
			return true
		}
	}
	return false
}

// mostFree returns the most free columns in any row.
func (s *Scheduler) mostFree() int {
	most := 0
	for r := range s.rows {
		most = max(most, s.rows[r].cols.free)
	}
	return most
}

// memoryBlocked reports whether j has enough free processors in some row
// but not enough memory on them: what Explain calls "no memory".
func (s *Scheduler) memoryBlocked(j *jobState) bool {
	if !s.memoryBound(j) {
		return false
	}
	for r := range s.rows {
		if s.rows[r].cols.free >= j.Processors && !s.fits(j, r) {
			return true
		}
	}
	return false
}

// alternates recomputes job-level alternative scheduling: a running job
// whose columns are all empty in another row (no job placed there, no other
// job running there as an alternate) also runs in that row's slices.
// Oldest jobs choose first. It returns the changes as decisions: the
// alternates that end and the new ones, each in job age order.
func (s *Scheduler) alternates() (ended, added []Decision) {
	used := s.altScratch
	for r := range used {
		clear(used[r])
	}
	next := make(map[JobID][]int, len(s.alt))
	for _, j := range s.byAge() {
		for r := range s.rows {
			if r == j.row || !s.columnsEmpty(j.cols, r, used[r]) {
				continue
			}
			for _, c := range j.cols {
				used[r][c/64] |= 1 << (c % 64)
			}
			next[j.ID] = append(next[j.ID], r)
		}
	}
	for _, j := range s.byAge() {
		for _, r := range s.alt[j.ID] {
			if !containsRow(next[j.ID], r) {
				ended = append(ended, Decision{Kind: AlternateEnd, Job: j.ID, Row: r, Columns: j.cols,
					Why: Explanation{Rule: RuleAlternateTaken, Procs: j.Processors}})
			}
		}
		for _, r := range next[j.ID] {
			if !containsRow(s.alt[j.ID], r) {
				added = append(added, Decision{Kind: Alternate, Job: j.ID, Row: r, Columns: j.cols,
					Why: Explanation{Rule: RuleAlternateFree, Procs: j.Processors}})
			}
		}
	}
	s.alt = next
	return ended, added
}

func containsRow(rows []int, r int) bool {
	for _, x := range rows {
		if x == r {
			return true
		}
	}
	return false
}

// columnsEmpty reports whether cols are free of placed jobs in row r and not
// taken by another alternate (altUsed).
func (s *Scheduler) columnsEmpty(cols []int, r int, altUsed []uint64) bool {
	free := s.rows[r].cols.words
	for _, c := range cols {
		bit := uint64(1) << (c % 64)
		if free[c/64]&bit == 0 || altUsed[c/64]&bit != 0 {
			return false
		}
	}
	return true
}

// byAge returns the running jobs, oldest arrival first.
func (s *Scheduler) byAge() []*jobState {
	s.ageScratch = s.ageScratch[:0]
	for r := range s.rows {
		s.ageScratch = append(s.ageScratch, s.rows[r].running...)
	}
	sortBySeq(s.ageScratch)
	return s.ageScratch
}

// rowActive reports whether row r has a job to run: placed or alternate.
func (s *Scheduler) rowActive(r int) bool {
	if len(s.rows[r].running) > 0 {
		return true
	}
	for _, rows := range s.alt {
		if containsRow(rows, r) {
			return true
		}
	}
	return false
}

// Slice returns the matrix row that runs in the time slice starting at
// now, advancing the rotation: the next row after the previous slice's, in
// cyclic order, skipping rows with no job to run (no placed job and no
// alternate). With MPL 1, or when the matrix is empty, it returns row 0.
func (s *Scheduler) Slice(now time.Duration) int {
	if s.cfg.MPL == 1 {
		return 0
	}
	for i := 1; i <= s.cfg.MPL; i++ {
		r := (s.curRow + i) % s.cfg.MPL
		if s.rowActive(r) {
			s.curRow = r
			return r
		}
	}
	return 0
}
