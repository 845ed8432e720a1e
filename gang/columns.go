package gang

import "math/bits"

// columnSet tracks which columns of one matrix row are free. Allocation
// takes the lowest-numbered free columns, so placements are deterministic
// and readable (a 4-processor job on an empty row gets columns 0–3).
type columnSet struct {
	words []uint64 // bit i set: column i is free
	free  int
	slab  []int // carved into the slices take returns: one allocation per many jobs
}

func newColumnSet(n int) columnSet {
	c := columnSet{words: make([]uint64, (n+63)/64), free: n}
	for i := 0; i < n; i++ {
		c.words[i/64] |= 1 << (i % 64)
	}
	return c
}

// take removes the k lowest free columns and returns them in ascending
// order, in new storage. The caller has checked that k <= c.free.
func (c *columnSet) take(k int) []int {
	if len(c.slab) < k {
		c.slab = make([]int, max(k, 4096))
	}
	// A full slice expression caps the result, so appending to it can never
	// run into the next job's columns.
	cols := c.slab[:0:k]
	c.slab = c.slab[k:]
	return c.takeInto(cols, k)
}

// takeInto is take appending to cols (empty), which it returns.
func (c *columnSet) takeInto(cols []int, k int) []int {
	for w := 0; len(cols) < k; w++ {
		word := c.words[w]
		for word != 0 && len(cols) < k {
			b := bits.TrailingZeros64(word)
			cols = append(cols, w*64+b)
			word &^= 1 << b
		}
		c.words[w] = word // the bits still set are the columns left free
	}
	c.free -= k
	return cols
}

// give returns columns to the set.
func (c *columnSet) give(cols []int) {
	for _, col := range cols {
		c.words[col/64] |= 1 << (col % 64)
	}
	c.free += len(cols)
}

// takeThese removes the given free columns from the set.
func (c *columnSet) takeThese(cols []int) {
	for _, col := range cols {
		c.words[col/64] &^= 1 << (col % 64)
	}
	c.free -= len(cols)
}
