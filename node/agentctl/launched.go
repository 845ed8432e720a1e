package agentctl

import "slices"

// MaxLaunched bounds Launched: 8 KiB in a welcome.
const MaxLaunched = 1024

// Launched remembers the jobs an agent's life got a launch for: the
// latest MaxLaunched of them, and the highest it forgot (ids below it may
// be missing from the list).
type Launched struct {
	ids   []int64
	floor int64
}

// Add records a launch of job id; a repeated one counts once.
func (l *Launched) Add(id int64) {
	if slices.Contains(l.ids, id) {
		return
	}
	if len(l.ids) == MaxLaunched {
		l.floor = max(l.floor, l.ids[0])
		l.ids = slices.Delete(l.ids, 0, 1)
	}
	l.ids = append(l.ids, id)
}

// Has reports whether id is among the ids kept.
func (l *Launched) Has(id int64) bool { return slices.Contains(l.ids, id) }

// List returns the ids kept, oldest first, and the floor.
func (l *Launched) List() ([]int64, int64) { return slices.Clone(l.ids), l.floor }
