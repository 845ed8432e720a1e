package workload

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cosched/cosched/jss/metrics"
)

// WriteTable prints the model: one row per class (interarrival and runtime
// moments), then any fallback notes.
func (m Model) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "Workload model of %s (%d processors)\n", m.Source, m.Processors)
	fmt.Fprintf(w, "offered load %.3f, mean runtime %s\n\n", m.OfferedLoad(m.Processors), metrics.FormatSeconds(m.MeanRuntime()))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sizes\tjobs\tmean interarrival\torder\tCV\tmean runtime\torder\tCV\tmean size\t")
	var notes []string
	for _, c := range m.Classes {
		ia, run := c.Interarrival, c.Runtime
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.2f\t%s\t%d\t%.2f\t%.1f\t\n",
			c.SizeRange(), c.Jobs, metrics.FormatSeconds(ia.Mean()), ia.Order, ia.CV(), metrics.FormatSeconds(run.Mean()), run.Order, run.CV(), c.MeanSize())
		if ia.Note != "" {
			notes = append(notes, fmt.Sprintf("class %s interarrival: %s", c.SizeRange(), ia.Note))
		}
		if run.Note != "" {
			notes = append(notes, fmt.Sprintf("class %s runtime: %s", c.SizeRange(), run.Note))
		}
	}
	tw.Flush()
	notes = append(notes, m.Notes...)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}
