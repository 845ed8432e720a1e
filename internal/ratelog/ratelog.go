// Package ratelog limits how often a repeated warning is logged: a peer
// that keeps connecting without the cluster key must not fill the disk,
// yet the operator must hear of it and of how many there were.
package ratelog

import (
	"sync"
	"time"
)

// Limiter allows one log line per interval and counts the ones it
// suppressed in between. It is safe for concurrent use.
type Limiter struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// New returns a Limiter allowing one line per every.
func New(every time.Duration) *Limiter { return &Limiter{every: every} }

// Allow reports whether a line may be logged at now and, if so, how many
// were suppressed since the last one (to say in that line).
func (l *Limiter) Allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	l.last = now
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
