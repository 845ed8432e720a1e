package jss

import (
	"slices"
	"time"
)

// bgsModel is backfilling gang scheduling at job level. A gang-scheduled
// job's processes always run together, with immediate messages, so while
// it runs it progresses exactly as it would alone: its dedicated run,
// paused between its slices. It needs its dedicated runtime of running
// time (plus Overheads.Launch); each slice in which it runs after not
// running in the previous one costs a job context switch.
type bgsModel struct {
	slice    time.Duration
	switchIn time.Duration
	launch   time.Duration
	rows     [][]*tsJob // jobs that run in each row's slices (placed and alternates)
	k        int64      // current slice number
	switches int64
	steps    int64
}

func newBGSModel(cfg *ModelConfig) *bgsModel {
	return &bgsModel{slice: cfg.Slice, switchIn: cfg.JobSwitch, launch: cfg.Overheads.Launch, rows: make([][]*tsJob, cfg.Scheduler.MPL)}
}

func (m *bgsModel) start(j *tsJob) { m.rows[j.row] = append(m.rows[j.row], j) }

func (m *bgsModel) alternate(j *tsJob, row int, on bool) {
	if on {
		m.rows[row] = append(m.rows[row], j)
		return
	}
	m.rows[row] = slices.DeleteFunc(m.rows[row], func(x *tsJob) bool { return x == j })
}

func (m *bgsModel) finish(j *tsJob) {
	for r := range m.rows {
		m.rows[r] = slices.DeleteFunc(m.rows[r], func(x *tsJob) bool { return x == j })
	}
}

func (m *bgsModel) runSlice(t time.Duration, row int, done func(*tsJob)) {
	m.k++
	for _, j := range m.rows[row] {
		if j.done || j.lastSlice == m.k {
			continue
		}
		m.steps++
		avail := m.slice
		at := t
		if j.lastSlice != m.k-1 {
			m.switches++
			cost := min(m.switchIn, avail)
			avail -= cost
			at += cost
		}
		j.lastSlice = m.k
		need := j.Runtime + m.launch - j.progress
		if need <= avail {
			j.progress = j.Runtime + m.launch
			j.done, j.end = true, at+need
			done(j)
			continue
		}
		j.progress += avail
	}
}

func (m *bgsModel) stats(st *ModelStats) {
	st.Switches += m.switches
	st.Steps += m.steps
}
