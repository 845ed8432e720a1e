package gang

import (
	"sort"
	"time"
)

// profile is the availability profile of conservative backfilling: the
// number of free processors over future time, counting running jobs until
// their estimated ends and queued jobs over their reservations. It is a
// step function: steps[i].free processors are free on
// [steps[i].at, steps[i+1].at), and the last step lasts forever (all
// processors free).
type profile struct {
	steps []step
}

type step struct {
	at   time.Duration
	free int
}

func newProfile(processors int) profile {
	return profile{steps: []step{{at: 0, free: processors}}}
}

// advance forgets the steps that ended at or before now.
func (p *profile) advance(now time.Duration) {
	i := 0
	for i+1 < len(p.steps) && p.steps[i+1].at <= now {
		i++
	}
	if i > 0 {
		// Reslicing keeps this O(1); append reallocates (and so compacts)
		// once the backing array's tail is used up.
		p.steps = p.steps[i:]
	}
}

// index returns the step containing t (the last one starting at or before t).
func (p *profile) index(t time.Duration) int {
	i := sort.Search(len(p.steps), func(i int) bool { return p.steps[i].at > t }) - 1
	return max(i, 0)
}

// split makes t a step boundary and returns the index of the step starting at t.
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
	p.steps[i+1] = step{at: t, free: p.steps[i].free}
	return i + 1
}

// add changes the free processors on [from, to) by delta: negative to
// reserve, positive to release.
func (p *profile) add(from, to time.Duration, delta int) {
	if to <= from {
		return
	}
	lo := p.split(from)
	hi := p.split(to)
	for i := lo; i < hi; i++ {
		p.steps[i].free += delta
	}
	// Merge equal neighbours at both seams so the profile stays small.
	p.mergeAt(hi)
	p.mergeAt(lo)
}

func (p *profile) mergeAt(i int) {
	if i > 0 && i < len(p.steps) && p.steps[i].free == p.steps[i-1].free {
		p.steps = append(p.steps[:i], p.steps[i+1:]...)
	}
}

// earliest returns the earliest time at or after from at which procs
// processors stay free for dur. A zero dur still needs procs free at the
// start. procs must not exceed the machine (the last step), or it never fits.
func (p *profile) earliest(from, dur time.Duration, procs int) time.Duration {
	i := p.index(from)
	start := max(from, p.steps[i].at)
	for {
		end := start + dur
		j := i
		fits := true
		for {
			if p.steps[j].free < procs {
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
			// Only possible if procs exceeds the machine; callers prevent it.
			return -1
		}
		i = j + 1
		start = p.steps[i].at
	}
}
