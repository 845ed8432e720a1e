package gang

import (
	"testing"
	"time"
)

// The profile answers for processors and memory together, stays merged,
// and forgets the past.
func TestProfile(t *testing.T) {
	p := NewProfile(0, 8, 100)
	p.Add(10, 20, -6, -10) // a job holding 6 processors and 10 memory on [10, 20)
	p.Add(15, 30, -1, -80) // another with little CPU but most of the memory
	for _, c := range []struct {
		from, dur time.Duration
		procs     int
		mem       int64
		want      time.Duration
	}{
		{0, 5, 8, 100, 0},  // before anything
		{0, 15, 8, 0, 30},  // all 8 for 15: after both jobs
		{12, 1, 2, 0, 12},  // 2 processors are free during the first job
		{12, 1, 2, 50, 12}, // and memory until 15
		{12, 5, 2, 50, 30}, // not both for 5 from 12: memory is short from 15 to 30
		{0, 1, 9, 0, -1},   // more than the machine
		{25, 0, 7, 20, 25}, // a zero duration needs them at the start
		{25, 0, 8, 20, 30}, // the 8th processor is back at 30
	} {
		if got := p.Earliest(c.from, c.dur, c.procs, c.mem); got != c.want {
			t.Errorf("Earliest(%v, %v, %d, %d) = %v, want %v", c.from, c.dur, c.procs, c.mem, got, c.want)
		}
	}
	if procs, mem := p.Free(16); procs != 1 || mem != 10 {
		t.Errorf("Free(16) = %d, %d", procs, mem)
	}
	p.Add(10, 20, 6, 10) // the first job ends early: its steps merge away
	p.Add(15, 30, 1, 80)
	if len(p.steps) != 1 {
		t.Errorf("released profile has %d steps: %+v", len(p.steps), p.steps)
	}
	p.Add(40, 50, -1, 0)
	p.Advance(45)
	if p.steps[0].at != 40 || p.Earliest(0, 1, 8, 0) != 50 {
		t.Errorf("after Advance(45): %+v", p.steps)
	}
}
