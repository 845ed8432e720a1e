package verify

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
)

// TestPlainStartSameErrors: while no column is offline and no alternate
// placed, a start on ascending columns is checked and placed in one loop
// (placeAscending); it accepts and rejects exactly what the whole check
// does, with the same error, and leaves the same matrix, on random starts
// (ascending, in any order, with columns outside the machine, repeated or
// taken) and ends.
func TestPlainStartSameErrors(t *testing.T) {
	fast, failed := 0, 0
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 5))
		P := 1 + rng.IntN(20)
		mpl := 1 + rng.IntN(2)
		m := gang.Machine{Processors: P}
		plain, whole := New(m, mpl), New(m, mpl)
		whole.plain = false
		next := gang.JobID(1)
		var known []gang.JobID
		for step := range 400 {
			var e1, e2 error
			switch op := rng.IntN(4); {
			case op == 0 || len(known) == 0:
				j := gang.Job{ID: next, Processors: 1 + rng.IntN(P)}
				next++
				known = append(known, j.ID)
				e1, e2 = plain.Submitted(j), whole.Submitted(j)
			case op == 1:
				i := rng.IntN(len(known))
				id := known[i]
				known = slices.Delete(known, i, i+1)
				e1, e2 = plain.Finished(id), whole.Finished(id)
			default:
				id := known[rng.IntN(len(known))]
				j := plain.jobs.Get(id)
				cols := make([]int, j.Processors)
				switch rng.IntN(3) {
				case 0: // anything, now and then outside the machine
					for k := range cols {
						cols[k] = rng.IntN(P+2) - 1
					}
				case 1: // distinct, in any order
					copy(cols, rng.Perm(P))
				case 2: // distinct and ascending, as the core gives them
					copy(cols, rng.Perm(P))
					slices.Sort(cols)
				}
				d := gang.Decision{Kind: gang.Start, Job: id, Row: rng.IntN(mpl), Columns: cols}
				at := time.Duration(step)
				e1, e2 = plain.Apply(&d, at), whole.Apply(&d, at)
				if e1 == nil && slices.IsSorted(cols) {
					fast++
				} else if e1 != nil {
					failed++
				}
			}
			if fmt.Sprint(e1) != fmt.Sprint(e2) {
				t.Fatalf("seed %d step %d: plain %v, whole %v", seed, step, e1, e2)
			}
			for r := range plain.placed {
				if !slices.Equal(plain.placed[r], whole.placed[r]) {
					t.Fatalf("seed %d step %d: row %d: plain %v, whole %v", seed, step, r, plain.placed[r], whole.placed[r])
				}
			}
		}
		if !plain.plain {
			t.Fatalf("seed %d: the plain checker left the plain path", seed)
		}
	}
	if fast < 100 || failed < 100 {
		t.Fatalf("%d starts on the one loop, %d failed: the cases are too few", fast, failed)
	}
}
