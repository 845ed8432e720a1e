package sweep

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cosched/cosched/sharing"
)

// WriteTable prints the key columns of rows as an aligned table: mode, MPL,
// slice, load, workload, memory mean (and the seed when rows have several),
// mean response and wait in seconds, mean execution-time slowdown, system
// and processor utilization. space rows show "-" for the slice: space sharing
// has none.
func WriteTable(w io.Writer, rows []Row) error {
	seeds := map[uint64]bool{}
	for _, r := range rows {
		seeds[r.Seed] = true
	}
	manySeeds := len(seeds) > 1
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"mode", "mpl", "slice", "load", "workload", "mem"}
	if manySeeds {
		head = append(head, "seed")
	}
	head = append(head, "mean_response", "mean_wait", "mean_exec_slowdown", "system_util", "processor_util")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		slice := r.Slice.String()
		if r.Mode == sharing.Space {
			slice = "-"
		}
		mem := "-"
		if r.MemMean > 0 {
			mem = MemSize(r.MemMean)
		}
		cells := []string{string(r.Mode), strconv.Itoa(r.MPL), slice, strconv.FormatFloat(r.Load, 'f', -1, 64), r.Workload, mem}
		if manySeeds {
			cells = append(cells, strconv.FormatUint(r.Seed, 10))
		}
		cells = append(cells,
			fmt.Sprintf("%.2fs", r.MeanResponse),
			fmt.Sprintf("%.2fs", r.MeanWait),
			fmt.Sprintf("%.3f", r.MeanExecSlowdown),
			fmt.Sprintf("%.3f", r.SystemUtil),
			fmt.Sprintf("%.3f", r.ProcessorUtil))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("sweep: write table: %w", err)
	}
	return nil
}

// MemSize prints a memory size in the largest unit that divides it exactly,
// binary or decimal, so 128MiB and 128MB both read back as given.
func MemSize(b int64) string {
	units := []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}}
	for _, u := range units {
		if b%u.size == 0 {
			return strconv.FormatInt(b/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(b, 10) + "B"
}

// TableMax is the most rows Publish prints as a table beside the files it
// wrote: a larger sweep is read from its files.
const TableMax = 60

// Publish presents the results at w: without dir, as the table alone
// (nothing is written); with dir, as the files written there (WriteFiles),
// one "wrote PATH" line each, then the table when there are at most
// TableMax rows.
func (r *Results) Publish(w io.Writer, dir string) error {
	if dir == "" {
		return WriteTable(w, r.Rows)
	}
	paths, err := r.WriteFiles(dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	if len(r.Rows) > 0 && len(r.Rows) <= TableMax {
		fmt.Fprintln(w)
		return WriteTable(w, r.Rows)
	}
	return nil
}
