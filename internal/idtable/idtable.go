// Package idtable maps job IDs to records without hashing in the usual
// case. A simulator numbers its jobs in arrival order and most leave
// within a few thousand arrivals of their own, so the live IDs fill a
// window that slides forward: a ring indexed by the ID itself holds them,
// and a lookup is an index, not a map probe (three map operations a job
// were a tenth of a simulation). Any ID outside a reasonable window (a
// caller's own numbering, one job that stays while a great many pass)
// goes to a map, so every ID works; only the cost differs.
package idtable

// maxRing bounds the ring: a window of IDs wider than this, or than
// sparse times the records held, spills to the map rather than holding
// a slot for every ID in between.
const (
	maxRing = 1 << 20
	minRing = 64
	sparse  = 16
)

// Table maps IDs to records (*V). The zero value is an empty table. It is
// not safe for concurrent use. An ID is held in the ring or in the map,
// never both; a record spilled to the map stays there until deleted.
type Table[K ~int64, V any] struct {
	ring   []*V // len a power of two; slot id&(len-1) holds id when base <= id < base+width
	base   K    // the lowest ID the window holds (its slot is non-nil when width > 0)
	width  int  // IDs base..base+width-1 are in the window
	inRing int  // records in the ring
	other  map[K]*V
}

// Len returns the number of records.
func (t *Table[K, V]) Len() int { return t.inRing + len(t.other) }

// window reports whether id is in the ring's window.
func (t *Table[K, V]) window(id K) bool {
	return id >= t.base && uint64(id-t.base) < uint64(t.width)
}

// Get returns id's record, or nil.
func (t *Table[K, V]) Get(id K) *V {
	if t.window(id) {
		if v := t.ring[int(id)&(len(t.ring)-1)]; v != nil || len(t.other) == 0 {
			return v
		}
	}
	if len(t.other) == 0 {
		return nil
	}
	return t.other[id] // spilled, possibly inside today's window
}

// Put records v (not nil) for id, replacing any record it had.
func (t *Table[K, V]) Put(id K, v *V) {
	if len(t.other) > 0 {
		if _, ok := t.other[id]; ok {
			t.other[id] = v
			return
		}
	}
	if t.window(id) {
		slot := &t.ring[int(id)&(len(t.ring)-1)]
		if *slot == nil {
			t.inRing++
		}
		*slot = v
		return
	}
	if t.inRing == 0 && id >= 0 {
		t.base, t.width = id, 0 // an empty window starts anywhere
	}
	if id >= t.base && t.extend(id) {
		t.ring[int(id)&(len(t.ring)-1)] = v
		t.inRing++
		return
	}
	if t.other == nil {
		t.other = make(map[K]*V)
	}
	t.other[id] = v
}

// extend widens the window to hold id (at or after base), growing the
// ring if needed; it reports false when that would make the ring too
// large or too sparse.
func (t *Table[K, V]) extend(id K) bool {
	if uint64(id-t.base) >= maxRing {
		return false
	}
	w := int(id-t.base) + 1
	if w > len(t.ring) {
		n := max(len(t.ring), minRing)
		for n < w {
			n *= 2
		}
		if n > maxRing || (n > minRing && n > sparse*(t.Len()+1)) {
			return false
		}
		t.grow(n)
	}
	t.width = w
	return true
}

// grow moves the window's records to a ring of n slots.
func (t *Table[K, V]) grow(n int) {
	ring := make([]*V, n)
	for i := range t.width {
		id := t.base + K(i)
		ring[int(id)&(n-1)] = t.ring[int(id)&(len(t.ring)-1)]
	}
	t.ring = ring
}

// Delete removes id's record, if any.
func (t *Table[K, V]) Delete(id K) {
	if t.window(id) {
		mask := len(t.ring) - 1
		if slot := &t.ring[int(id)&mask]; *slot != nil {
			*slot = nil
			t.inRing--
			// Slide the window's start past the slots already emptied, so
			// that it spans the records held, not every ID ever given.
			for t.width > 0 && t.ring[int(t.base)&mask] == nil {
				t.base++
				t.width--
			}
			return
		}
	}
	if len(t.other) > 0 {
		delete(t.other, id)
	}
}
