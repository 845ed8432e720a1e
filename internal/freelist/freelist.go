// Package freelist keeps released records for reuse, so that a long run
// allocates no record per job once warm: the scheduler core's and the
// simulator's job records. Pure; the caller resets what it reuses.
package freelist

// List holds released *T. The zero value is empty. It is not safe for
// concurrent use.
type List[T any] struct {
	free []*T
}

// Get returns a released record (as it was released), else a new zero one.
func (l *List[T]) Get() *T {
	n := len(l.free)
	if n == 0 {
		return new(T)
	}
	x := l.free[n-1]
	l.free = l.free[:n-1]
	return x
}

// Put releases x for a later Get: the caller must hold no reference to it.
func (l *List[T]) Put(x *T) { l.free = append(l.free, x) }
