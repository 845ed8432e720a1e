package hosts

import (
	"sort"
	"time"
)

// profile is one host's availability over future time, for processors and
// memory: steps[i] holds on [steps[i].at, steps[i+1].at), the last step
// forever. Running jobs count until their estimated ends, reservations
// over their slots.
type profile struct {
	steps []step
}

type step struct {
	at    time.Duration
	procs int
	mem   int64
}

func newProfile(now time.Duration, procs int, mem int64) profile {
	return profile{steps: []step{{at: now, procs: procs, mem: mem}}}
}

func (p *profile) index(t time.Duration) int {
	return max(sort.Search(len(p.steps), func(i int) bool { return p.steps[i].at > t })-1, 0)
}

func (p *profile) split(t time.Duration) int {
	if t <= p.steps[0].at {
		return 0
	}
	i := p.index(t)
	if p.steps[i].at == t {
		return i
	}
	p.steps = append(p.steps, step{})
	copy(p.steps[i+2:], p.steps[i+1:])
	p.steps[i+1] = step{at: t, procs: p.steps[i].procs, mem: p.steps[i].mem}
	return i + 1
}

// add changes what is free on [from, to) by procs and mem (negative to
// take).
func (p *profile) add(from, to time.Duration, procs int, mem int64) {
	from = max(from, p.steps[0].at)
	if to <= from {
		return
	}
	lo, hi := p.split(from), p.split(to)
	for i := lo; i < hi; i++ {
		p.steps[i].procs += procs
		p.steps[i].mem += mem
	}
}

// earliest is the earliest time at or after from at which procs
// processors and mem memory stay free for dur (a zero dur needs them free
// at the start), or -1 if never (more than the host has).
func (p *profile) earliest(from, dur time.Duration, procs int, mem int64) time.Duration {
	i := p.index(from)
	start := max(from, p.steps[i].at)
	for {
		end := start + dur
		j, fits := i, true
		for {
			if p.steps[j].procs < procs || p.steps[j].mem < mem {
				fits = false
				break
			}
			if j+1 >= len(p.steps) || p.steps[j+1].at >= end {
				break
			}
			j++
		}
		if fits {
			return start
		}
		if j+1 >= len(p.steps) {
			return -1
		}
		i = j + 1
		start = p.steps[i].at
	}
}
