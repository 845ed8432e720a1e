package nowsim

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cosched/cosched/jss/metrics"
)

// MeanWork is the workload's mean processing time: the learned estimator's
// default prior.
func MeanWork(jobs []Job) time.Duration {
	var sum float64
	for _, j := range jobs {
		sum += float64(j.Work)
	}
	return time.Duration(sum / float64(max(1, len(jobs))))
}

// Formats lists the output formats of Write.
func Formats() []string { return []string{"table", "json", "csv"} }

// Write renders results in the named format: WriteTable (with t), an
// indented JSON array, or WriteCSV.
func Write(w io.Writer, format string, t Table, results []Result) error {
	switch format {
	case "table":
		return WriteTable(w, t, results)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	case "csv":
		return WriteCSV(w, results)
	}
	return fmt.Errorf("nowsim: unknown format %q (valid: %s)", format, strings.Join(Formats(), ", "))
}

var csvHeader = []string{"policy", "estimate", "seed", "jobs", "makespan_s", "mean_flow_s", "max_wait_s", "mean_wait_s"}

// WriteCSV writes one line per result (times in seconds).
func WriteCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	for _, r := range results {
		_ = cw.Write([]string{string(r.Policy), r.Estimate, strconv.FormatUint(r.Seed, 10), strconv.Itoa(r.Jobs),
			num(r.Makespan), num(r.MeanFlow), num(r.MaxWait), num(r.MeanWait)})
	}
	cw.Flush()
	return cw.Error()
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Table is what WriteTable prints above the results: the nodes, the
// workload (a trace's name, jobs and drops, or the generator's settings)
// and the estimator.
type Table struct {
	Speeds    []float64
	Trace     string // "" for a generated workload (Gen)
	TraceJobs int
	Dropped   Dropped
	Gen       GenConfig
	Estimate  string
}

// WriteTable prints the header lines, then one aligned row per result.
func WriteTable(w io.Writer, t Table, results []Result) error {
	fmt.Fprintf(w, "nodes     %d, speeds %s\n", len(t.Speeds), SpeedSummary(t.Speeds))
	if t.Trace != "" {
		fmt.Fprintf(w, "workload  %s: %d jobs, %d dropped (%d no size, %d no runtime, %d no submit, %d wider than the nodes)\n",
			t.Trace, t.TraceJobs, t.Dropped.Total(), t.Dropped.NoSize, t.Dropped.NoRuntime, t.Dropped.NoSubmit, t.Dropped.TooWide)
	} else {
		c := t.Gen.Counts()
		fmt.Fprintf(w, "workload  %d jobs generated: %d sequential, %d small, %d large parallel; span %v; processing times seq %v, small %v, large %v\n",
			t.Gen.Jobs, c[0], c[1], c[2], t.Gen.Span, t.Gen.PTime[0], t.Gen.PTime[1], t.Gen.PTime[2])
	}
	fmt.Fprintf(w, "estimate  %s\n\n", t.Estimate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tseed\tjobs\tmakespan\tmean_flow\tmax_wait\tmean_wait\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", r.Policy, r.Seed, r.Jobs, metrics.FormatSeconds(r.Makespan), metrics.FormatSeconds(r.MeanFlow), metrics.FormatSeconds(r.MaxWait), metrics.FormatSeconds(r.MeanWait))
	}
	return tw.Flush()
}

// SpeedSummary writes speeds back as NxS items (ParseSpeeds reads them): 1,1,2 → 2x1,1x2.
func SpeedSummary(speeds []float64) string {
	var items []string
	for i := 0; i < len(speeds); {
		j := i
		for j < len(speeds) && speeds[j] == speeds[i] {
			j++
		}
		items = append(items, fmt.Sprintf("%dx%s", j-i, strconv.FormatFloat(speeds[i], 'g', -1, 64)))
		i = j
	}
	return strings.Join(items, ",")
}
