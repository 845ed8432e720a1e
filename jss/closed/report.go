package closed

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Formats lists the output formats of Write.
func Formats() []string { return []string{"table", "json", "csv"} }

// Write renders an experiment's rows in the named format.
func Write(w io.Writer, format string, e *Experiment, rows []Row) error {
	var err error
	switch format {
	case "table":
		err = writeTable(w, e, rows)
	case "json":
		err = writeJSON(w, e, rows)
	case "csv":
		err = writeCSV(w, e, rows)
	default:
		return fmt.Errorf("closed: unknown format %q (valid: %s)", format, strings.Join(Formats(), ", "))
	}
	if err != nil {
		return fmt.Errorf("closed: write %s: %w", format, err)
	}
	return nil
}

// writeJSON writes {"experiment": …, "rows": […]}.
func writeJSON(w io.Writer, e *Experiment, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Experiment *Experiment `json:"experiment"`
		Rows       []Row       `json:"rows"`
	}{e, rows})
}

// csvColumns are the CSV header: each metric then its half-width, the
// gains when the rows have them, and the model's parameters (so files of
// several runs, say one per C, can be concatenated).
func csvColumns(gains bool) []string {
	cols := []string{"policy", "jobs"}
	for _, m := range []string{"mean_response", "mean_cycle", "throughput", "cpu_util", "io_util"} {
		cols = append(cols, m, m+"_hw")
	}
	if gains {
		cols = append(cols, "d_rt", "d_k", "d_r")
	}
	return append(cols, "procs", "dist", "cv", "service_mean", "io_mean")
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func writeCSV(w io.Writer, e *Experiment, rows []Row) error {
	gains := len(rows) > 0 && rows[0].Gains != nil
	cw := csv.NewWriter(w)
	_ = cw.Write(csvColumns(gains)) // errors surface through cw.Error
	for _, r := range rows {
		rec := []string{string(r.Policy), strconv.Itoa(r.Jobs)}
		for _, e := range r.estimates() {
			rec = append(rec, num(e.Mean), num(e.HalfWidth))
		}
		if gains {
			rec = append(rec, num(r.Gains.DRT), num(r.Gains.DK), num(r.Gains.DR))
		}
		rec = append(rec, strconv.Itoa(e.Procs), string(e.Service.Dist), num(e.Service.C()), num(e.Service.Mean), num(e.IOMean))
		_ = cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

func (r *Row) estimates() []Estimate {
	return []Estimate{r.Response, r.Cycle, r.Throughput, r.CPUUtil, r.IOUtil}
}

// writeTable writes a preamble with the model and one aligned row per
// point: each metric as mean ± half-width, gains in percent.
func writeTable(w io.Writer, e *Experiment, rows []Row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "closed network  %d processors, I/O exp (k=%g), service %s\n", e.Procs, e.IOMean, e.Service)
	fmt.Fprintf(&b, "replications    %d per point, each %d completions after %d warm-up (seed %d); ± is the 95%% confidence half-width\n\n",
		e.Replications, e.Completions, e.Warmup, e.Seed)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	gains := len(rows) > 0 && rows[0].Gains != nil
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"policy", "jobs", "mean_response", "mean_cycle", "throughput", "cpu_util", "io_util"}
	if gains {
		head = append(head, "D_RT", "D_K", "D_R")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		cells := []string{string(r.Policy), strconv.Itoa(r.Jobs)}
		for i, est := range r.estimates() {
			digits := 3
			if i >= 3 { // utilizations
				digits = 4
			}
			cells = append(cells, fmt.Sprintf("%.*f ± %.*f", digits, est.Mean, digits, est.HalfWidth))
		}
		if gains {
			for _, g := range []float64{r.Gains.DRT, r.Gains.DK, r.Gains.DR} {
				cells = append(cells, fmt.Sprintf("%.1f%%", 100*g))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}
