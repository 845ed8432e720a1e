package gang

import (
	"sort"
	"time"
)

// Profile is an availability profile: the processors and memory free over
// future time, counting running jobs until their estimated ends and
// queued jobs over their reservations. It is a step function: steps[i]
// holds on [steps[i].at, steps[i+1].at), and the last step lasts forever.
// Conservative and priority backfilling keep one per matrix row (memory
// unused); package gang/hosts one per host.
type Profile struct {
	steps []profileStep
}

type profileStep struct {
	at    time.Duration
	procs int
	mem   int64
}

// NewProfile is a profile with procs processors and mem memory free from
// at on.
func NewProfile(at time.Duration, procs int, mem int64) Profile {
	return Profile{steps: []profileStep{{at: at, procs: procs, mem: mem}}}
}

// Advance forgets the steps that ended at or before now.
func (p *Profile) Advance(now time.Duration) {
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
func (p *Profile) index(t time.Duration) int {
	i := sort.Search(len(p.steps), func(i int) bool { return p.steps[i].at > t }) - 1
	return max(i, 0)
}

// Free is what is free at t.
func (p *Profile) Free(t time.Duration) (procs int, mem int64) {
	s := p.steps[p.index(t)]
	return s.procs, s.mem
}

// split makes t a step boundary and returns the index of the step starting at t.
func (p *Profile) split(t time.Duration) int {
	if t <= p.steps[0].at {
		return 0
	}
	i := p.index(t)
	if p.steps[i].at == t {
		return i
	}
	p.steps = append(p.steps, profileStep{})
	copy(p.steps[i+2:], p.steps[i+1:])
	p.steps[i+1] = profileStep{at: t, procs: p.steps[i].procs, mem: p.steps[i].mem}
	return i + 1
}

// Add changes what is free on [from, to) by procs and mem: negative to
// reserve, positive to release. The part before the profile's first step
// is ignored.
func (p *Profile) Add(from, to time.Duration, procs int, mem int64) {
	from = max(from, p.steps[0].at)
	if to <= from {
		return
	}
	lo := p.split(from)
	hi := p.split(to)
	for i := lo; i < hi; i++ {
		p.steps[i].procs += procs
		p.steps[i].mem += mem
	}
	// Merge equal neighbours at both seams so the profile stays small
	// (Earliest's answers do not depend on it).
	p.mergeAt(hi)
	p.mergeAt(lo)
}

func (p *Profile) mergeAt(i int) {
	if i > 0 && i < len(p.steps) && p.steps[i].procs == p.steps[i-1].procs && p.steps[i].mem == p.steps[i-1].mem {
		p.steps = append(p.steps[:i], p.steps[i+1:]...)
	}
}

// Earliest returns the earliest time at or after from at which procs
// processors and mem memory stay free for dur (a zero dur still needs them
// free at the start), or -1 if never: more than the last step has, which
// callers prevent.
func (p *Profile) Earliest(from, dur time.Duration, procs int, mem int64) time.Duration {
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
