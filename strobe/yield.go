package strobe

import (
	"runtime"
	"time"

	"github.com/cosched/cosched/internal/mono"
)

// yieldEvery is how often a locked real-time loop goes through the Go
// scheduler of its own accord: under the runtime's 10 ms (forcePreemptNS).
//
// Why: the Go runtime's monitor (sysmon) treats a goroutine that has not
// been rescheduled for 10 ms as a long runner. The strobe loop never is
// (it only blocks in system calls), so sysmon preempted it in the middle
// of its wait (a signal, then a hand-off through the scheduler that the
// next strobe may have to wait out) and took its P away during every
// receive; each time it did, sysmon went back to polling every 20 µs and
// woke the thread it had taken the P from when it came back: 2,000
// wake-ups a second per agent at 10 ms slices, at real-time priority, most
// of 2 cores at 32 agents. Yielding right after a strobe, when the loop has
// the whole slice ahead, keeps the goroutine "fresh" at a moment of its
// choosing.
const yieldEvery = 5 * time.Millisecond

// yielder calls runtime.Gosched at most once every yieldEvery.
type yielder struct{ last int64 }

// after yields if yieldEvery has passed since the last yield; now is the
// caller's current mono.Now.
func (y *yielder) after(now int64) {
	if now-y.last < int64(yieldEvery) {
		return
	}
	runtime.Gosched()
	y.last = mono.Now()
}
