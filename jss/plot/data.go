package plot

import (
	"cmp"
	"slices"
	"time"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// cell is one point of a sweep less its seed, with its metrics averaged
// over the seeds run.
type cell struct {
	mode     sharing.Mode
	mpl      int
	slice    time.Duration
	load     float64
	workload string
	mem      int64
	seeds    int

	response, wait, execSlowdown, procUtil float64
}

type cellKey struct {
	mode     sharing.Mode
	mpl      int
	slice    time.Duration
	load     float64
	workload string
	mem      int64
}

// average folds rows over seeds, returning cells in a deterministic order
// (workload, memory, mode, MPL, slice, load) and the most seeds any cell has.
func average(rows []sweep.Row) ([]cell, int) {
	byKey := map[cellKey]*cell{}
	for _, r := range rows {
		k := cellKey{r.Mode, r.MPL, r.Slice, r.Load, r.Workload, r.MemMean}
		if r.Mode == sharing.Space {
			k.mpl, k.slice = 1, 0
		}
		c := byKey[k]
		if c == nil {
			c = &cell{mode: k.mode, mpl: k.mpl, slice: k.slice, load: k.load, workload: k.workload, mem: k.mem}
			byKey[k] = c
		}
		c.seeds++
		c.response += r.MeanResponse
		c.wait += r.MeanWait
		c.execSlowdown += r.MeanExecSlowdown
		c.procUtil += r.ProcessorUtil
	}
	cells := make([]cell, 0, len(byKey))
	most := 0
	for _, c := range byKey {
		n := float64(c.seeds)
		c.response /= n
		c.wait /= n
		c.execSlowdown /= n
		c.procUtil /= n
		most = max(most, c.seeds)
		cells = append(cells, *c)
	}
	slices.SortFunc(cells, func(a, b cell) int {
		return cmp.Or(
			cmp.Compare(a.workload, b.workload),
			cmp.Compare(a.mem, b.mem),
			cmp.Compare(modeRank(a.mode), modeRank(b.mode)),
			cmp.Compare(a.mpl, b.mpl),
			cmp.Compare(a.slice, b.slice),
			cmp.Compare(a.load, b.load),
		)
	})
	return cells, most
}

// modeRank orders modes as jss.Modes does: space, gang, bcs.
func modeRank(m sharing.Mode) int {
	if i := slices.Index(jss.Modes(), m); i >= 0 {
		return i
	}
	return len(jss.Modes())
}

// distinct returns the sorted distinct values of f over cells.
func distinct[T cmp.Ordered](cells []cell, f func(cell) T) []T {
	var out []T
	for _, c := range cells {
		out = append(out, f(c))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// filter returns the cells for which keep is true.
func filter(cells []cell, keep func(cell) bool) []cell {
	var out []cell
	for _, c := range cells {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}
