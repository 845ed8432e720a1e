// Package gcfloor keeps a process's garbage-collection goal at or above a
// floor: GOGC's proportional goal (the live heap times 1 + GOGC/100) when
// the live heap is large, the floor when it is small.
//
// Why: an agent's live heap is a few megabytes, so at GOGC=100 it
// collected every second or two. Every collection stops the world twice,
// and on a host whose processors are full (32 agents and their ranks on
// 2 cores) a stop waits for the agent's slowest thread to be scheduled:
// stops of 0.5 to 1.8 s were measured, during which the strobe thread
// cannot take a P back from its system call, so its switch waits too.
// Collecting rarely is the cure for a small heap; a floor, unlike
// GOGC=off with a memory limit, still collects in proportion when the
// heap grows.
package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds the GOGC value the floor sets (a live heap of a few
// kilobytes would otherwise ask for a huge percentage).
const maxPercent = 1 << 20

// Floor is a running floor; Stop ends it.
type Floor struct {
	floor uint64
	base  int // GOGC when Start was called: the proportional part

	mu      sync.Mutex
	stopped bool
	set     int // the GOGC value set last
}

// Start raises the heap goal to at least floor bytes (the next collection
// comes no sooner than when the heap reaches it) and keeps it so after
// every collection, until Stop. It leaves things as they are when GOGC is
// off (negative) or floor is 0. One Floor per process: the setting is the
// process's.
func Start(floor uint64) *Floor {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	f := &Floor{floor: floor, base: base, set: base}
	if floor == 0 || base < 0 {
		f.stopped = true
		return f
	}
	f.adjust()
	f.arm()
	return f
}

// Stop puts GOGC back as it was at Start and stops following collections.
// Idempotent.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	debug.SetGCPercent(f.base)
}

// Percent is the GOGC value the floor set last.
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set
}

// sentinel is garbage from birth: its cleanup runs after the collection
// that finds it, which is how the floor hears of each collection.
type sentinel struct{ _ [16]byte }

// arm registers a cleanup on a fresh sentinel that adjusts the goal and
// arms the next one, unless the floor has stopped. Cleanups run on the
// runtime's cleanup goroutine, one at a time.
func (f *Floor) arm() {
	s := &sentinel{}
	runtime.AddCleanup(s, func(f *Floor) {
		if f.adjust() {
			f.arm()
		}
	}, f)
}

// adjust sets GOGC so that the next goal is max(floor, the proportional
// goal); false once stopped.
func (f *Floor) adjust() bool {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/frees:bytes"}}
	metrics.Read(sample)
	live := uint64(0)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = sample[0].Value.Uint64()
	}
	if live == 0 && sample[1].Value.Kind() == metrics.KindUint64 && sample[2].Value.Kind() == metrics.KindUint64 {
		// No collection yet: the heap in use is the best estimate.
		live = sample[1].Value.Uint64() - sample[2].Value.Uint64()
	}
	p := percentFor(live, f.floor, f.base)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	if p != f.set {
		debug.SetGCPercent(p)
		f.set = p
	}
	return true
}

// percentFor is the GOGC value whose goal, live × (1 + p/100), is the
// larger of floor and the goal at base.
func percentFor(live, floor uint64, base int) int {
	live = max(live, 1)
	if live >= floor {
		return base
	}
	p := math.Ceil(float64(floor-live) * 100 / float64(live))
	if p > maxPercent {
		return maxPercent
	}
	return max(base, int(p))
}
