package bench

// Grid returns the shape of the 2-D torus that the news pattern lays a
// job's n processes on: rows × cols = n with rows the largest divisor of n
// not above √n (a square when n is a perfect square, 1 × n when n is prime).
// Process p sits at row p / cols, column p % cols.
func Grid(n int) (rows, cols int) {
	rows = 1
	for r := 1; r*r <= n; r++ {
		if n%r == 0 {
			rows = r
		}
	}
	return rows, n / rows
}

// Step is one blocking exchange: send a message to To, then receive one
// from From.
type Step struct{ To, From int }

// Steps returns process p's blocking exchanges per iteration for a job of n
// processes, in the order that cannot deadlock: in each step every process
// sends in the same direction (transpose: to p+j) and receives from the
// opposite one (from p−j), so each receive is matched by a send that was
// issued before any process waits in that step.
//
//	barrier    none (the barrier itself carries no data)
//	news       north, south, east, west on the torus of Grid(n); a
//	           direction whose neighbour is p itself is skipped
//	transpose  j = 1 … n−1: to (p+j) mod n, from (p−j) mod n
func Steps(pattern Pattern, p, n int) []Step {
	switch pattern {
	case News:
		rows, cols := Grid(n)
		r, c := p/cols, p%cols
		at := func(r, c int) int { return ((r+rows)%rows)*cols + (c+cols)%cols }
		north, south := at(r-1, c), at(r+1, c)
		west, east := at(r, c-1), at(r, c+1)
		steps := make([]Step, 0, 4)
		for _, s := range []Step{{To: north, From: south}, {To: south, From: north}, {To: east, From: west}, {To: west, From: east}} {
			if s.To != p {
				steps = append(steps, s)
			}
		}
		return steps
	case Transpose:
		steps := make([]Step, 0, n-1)
		for j := 1; j < n; j++ {
			steps = append(steps, Step{To: (p + j) % n, From: (p - j + n) % n})
		}
		return steps
	}
	return nil
}

// MessagesPerIteration returns how many messages process p sends (and
// receives) per iteration: the same under B and NB, since NB posts the
// messages of every step at once.
func MessagesPerIteration(pattern Pattern, p, n int) int {
	switch pattern {
	case News:
		return len(Steps(News, p, n))
	case Transpose:
		return max(n-1, 0)
	}
	return 0
}
