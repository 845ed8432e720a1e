// Package sizepool keeps released slices for reuse by size class (class c
// holds capacity 1<<c), so storage follows what is in use at once, not
// the records that once held it. The scheduler core and its checker each
// give a running job a slice of its columns: kept per job record, every
// record grew to the widest job it ever held, and a long queue of records
// made that most of a simulation's fresh memory.
package sizepool

import "math/bits"

// Pool holds released slices of E by size class. The zero value is an
// empty pool. It is not safe for concurrent use.
type Pool[E any] struct {
	free [][][]E // class → released slices, empty, capacity 1<<class
}

// Get returns an empty slice with room for n elements (n >= 1): a released
// one of the smallest class that holds n, else a new one of that class.
func (p *Pool[E]) Get(n int) []E {
	c := class(n)
	if c < len(p.free) {
		if k := len(p.free[c]); k > 0 {
			s := p.free[c][k-1]
			p.free[c] = p.free[c][:k-1]
			return s
		}
	}
	return make([]E, 0, 1<<c)
}

// Put releases s, which Get returned, for reuse: the caller must not use
// it afterwards. A nil s is ignored.
func (p *Pool[E]) Put(s []E) {
	if cap(s) == 0 {
		return
	}
	c := class(cap(s))
	if cap(s) != 1<<c {
		return // not Get's: its class would not hold what Get promises
	}
	if c >= len(p.free) {
		p.free = append(p.free, make([][][]E, c+1-len(p.free))...)
	}
	p.free[c] = append(p.free[c], s[:0])
}

// class is the smallest c with 1<<c >= n.
func class(n int) int { return bits.Len(uint(n - 1)) }
