// Package report renders simulation results for people (an aligned
// comparison table, one column per policy) and for programs (JSON, and CSV
// with one row per policy and a fixed set of columns).
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
)

// Formats lists the output formats.
func Formats() []string { return []string{"table", "json", "csv"} }

// Write renders results in the named format.
func Write(w io.Writer, format string, results []jss.TraceResult) error {
	switch format {
	case "table":
		return Table(w, results)
	case "json":
		return JSON(w, results)
	case "csv":
		return CSV(w, results)
	}
	return fmt.Errorf("report: unknown format %q (valid: %s)", format, strings.Join(Formats(), ", "))
}

// JSON writes the results as an indented JSON array.
func JSON(w io.Writer, results []jss.TraceResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if results == nil {
		results = []jss.TraceResult{}
	}
	if err := enc.Encode(results); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// column is one CSV column: its name and how to read it from a result.
type column struct {
	name  string
	value func(r *jss.TraceResult) string
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func statColumns(prefix string, get func(s *metrics.Summary) metrics.Stat) []column {
	return []column{
		{prefix + "_mean", func(r *jss.TraceResult) string { return num(get(&r.Metrics).Mean) }},
		{prefix + "_median", func(r *jss.TraceResult) string { return num(get(&r.Metrics).Median) }},
		{prefix + "_p95", func(r *jss.TraceResult) string { return num(get(&r.Metrics).P95) }},
		{prefix + "_max", func(r *jss.TraceResult) string { return num(get(&r.Metrics).Max) }},
	}
}

func csvColumns() []column {
	cols := []column{
		{"policy", func(r *jss.TraceResult) string { return string(r.Policy) }},
		{"trace", func(r *jss.TraceResult) string { return r.Trace }},
		{"processors", func(r *jss.TraceResult) string { return strconv.Itoa(r.Processors) }},
		{"jobs_read", func(r *jss.TraceResult) string { return strconv.FormatInt(r.Jobs.Read, 10) }},
		{"jobs_simulated", func(r *jss.TraceResult) string { return strconv.Itoa(r.Metrics.Jobs) }},
		{"jobs_dropped", func(r *jss.TraceResult) string { return strconv.FormatInt(r.Jobs.Dropped.Total(), 10) }},
		{"estimates_extended", func(r *jss.TraceResult) string { return strconv.FormatInt(r.Jobs.Extended, 10) }},
		{"runtimes_truncated", func(r *jss.TraceResult) string { return strconv.FormatInt(r.Jobs.Truncated, 10) }},
	}
	cols = append(cols, statColumns("wait_s", func(s *metrics.Summary) metrics.Stat { return s.Wait })...)
	cols = append(cols, statColumns("response_s", func(s *metrics.Summary) metrics.Stat { return s.Response })...)
	cols = append(cols, statColumns("slowdown", func(s *metrics.Summary) metrics.Stat { return s.Slowdown })...)
	cols = append(cols, statColumns("bounded_slowdown", func(s *metrics.Summary) metrics.Stat { return s.BoundedSlowdown })...)
	return append(cols,
		column{"tau_s", func(r *jss.TraceResult) string { return num(r.Metrics.Tau) }},
		column{"utilization", func(r *jss.TraceResult) string { return num(r.Metrics.Utilization) }},
		column{"makespan_s", func(r *jss.TraceResult) string { return num(r.Metrics.Makespan) }},
		column{"sum_flow_s", func(r *jss.TraceResult) string { return num(r.Metrics.SumFlow) }},
		column{"weighted_flow", func(r *jss.TraceResult) string { return num(r.Metrics.WeightedFlow) }},
	)
}

// binColumns are the columns of runtime bin b: runtime_1m_10m_wait_s_mean, …
func binColumns(b int) []column {
	label := strings.NewReplacer("[", "", ")", "", ",", "_", "∞", "inf").Replace(metrics.RuntimeBinLabel(b))
	prefix := "runtime_" + label + "_"
	bin := func(r *jss.TraceResult) *metrics.Bin {
		if b < len(r.ByRuntime) {
			return &r.ByRuntime[b]
		}
		return &metrics.Bin{}
	}
	stat := func(name string, get func(b *metrics.Bin) metrics.Stat) []column {
		return []column{
			{prefix + name + "_mean", func(r *jss.TraceResult) string { return num(get(bin(r)).Mean) }},
			{prefix + name + "_median", func(r *jss.TraceResult) string { return num(get(bin(r)).Median) }},
			{prefix + name + "_p95", func(r *jss.TraceResult) string { return num(get(bin(r)).P95) }},
			{prefix + name + "_max", func(r *jss.TraceResult) string { return num(get(bin(r)).Max) }},
		}
	}
	cols := []column{{prefix + "jobs", func(r *jss.TraceResult) string { return strconv.Itoa(bin(r).Jobs) }}}
	cols = append(cols, stat("wait_s", func(b *metrics.Bin) metrics.Stat { return b.Wait })...)
	cols = append(cols, stat("response_s", func(b *metrics.Bin) metrics.Stat { return b.Response })...)
	cols = append(cols, stat("slowdown", func(b *metrics.Bin) metrics.Stat { return b.Slowdown })...)
	cols = append(cols, stat("bounded_slowdown", func(b *metrics.Bin) metrics.Stat { return b.BoundedSlowdown })...)
	return append(cols,
		column{prefix + "utilization", func(r *jss.TraceResult) string { return num(bin(r).Utilization) }},
		column{prefix + "sum_flow_s", func(r *jss.TraceResult) string { return num(bin(r).SumFlow) }},
	)
}

// withBins appends every runtime bin's columns when some result has them.
func withBins(cols []column, results []jss.TraceResult) []column {
	for i := range results {
		if len(results[i].ByRuntime) > 0 {
			for b := range results[i].ByRuntime {
				cols = append(cols, binColumns(b)...)
			}
			break
		}
	}
	return cols
}

// CSVColumns returns CSV's header row.
func CSVColumns() []string {
	var names []string
	for _, c := range csvColumns() {
		names = append(names, c.name)
	}
	return names
}

// CSV writes a header row and one row per result. With metrics by runtime
// bin, each bin's columns follow the overall ones.
func CSV(w io.Writer, results []jss.TraceResult) error {
	cols := withBins(csvColumns(), results)
	cw := csv.NewWriter(w)
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = c.name
	}
	_ = cw.Write(row) // errors surface through cw.Error below
	for k := range results {
		for i, c := range cols {
			row[i] = c.value(&results[k])
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Table writes a comparison for people: a preamble describing the trace and
// what was dropped or adjusted, then one row per metric and one column per
// policy.
func Table(w io.Writer, results []jss.TraceResult) error {
	if len(results) == 0 {
		_, err := fmt.Fprintln(w, "no results")
		return err
	}
	var b strings.Builder
	first := &results[0]
	fmt.Fprintf(&b, "trace    %s\nmachine  %d processors (from %s)\n", first.Trace, first.Processors, first.ProcessorsFrom)
	fmt.Fprintf(&b, "jobs     %s read, %s simulated, %s dropped\n",
		group(float64(first.Jobs.Read), 0), group(float64(first.Metrics.Jobs), 0), group(float64(first.Jobs.Dropped.Total()), 0))
	if d := first.Jobs.Dropped.Format(func(n int64) string { return group(float64(n), 0) }); d != "" {
		fmt.Fprintf(&b, "dropped  %s\n", d)
	}
	if first.Jobs.Extended > 0 {
		fmt.Fprintf(&b, "overrun  %s jobs ran past their estimate: estimate raised to the runtime (--overrun extend)\n", group(float64(first.Jobs.Extended), 0))
	}
	if first.Jobs.Truncated > 0 {
		fmt.Fprintf(&b, "overrun  %s jobs ran past their estimate: killed at the estimate (--overrun kill)\n", group(float64(first.Jobs.Truncated), 0))
	}
	for _, s := range first.Skipped {
		fmt.Fprintf(&b, "skipped  %s\n", s)
	}
	b.WriteByte('\n')

	var rows [][]string // metric, statistic, one cell per policy
	row := func(metric, stat string, cell func(r *jss.TraceResult) string) {
		cells := []string{metric, stat}
		for i := range results {
			cells = append(cells, cell(&results[i]))
		}
		rows = append(rows, cells)
	}
	row("", "", func(r *jss.TraceResult) string { return string(r.Policy) })
	stat := func(name string, get func(s *metrics.Summary) metrics.Stat, decimals int) {
		row(name, "mean", func(r *jss.TraceResult) string { return group(get(&r.Metrics).Mean, decimals) })
		row("", "median", func(r *jss.TraceResult) string { return group(get(&r.Metrics).Median, decimals) })
		row("", "p95", func(r *jss.TraceResult) string { return group(get(&r.Metrics).P95, decimals) })
		row("", "max", func(r *jss.TraceResult) string { return group(get(&r.Metrics).Max, decimals) })
	}
	stat("wait (s)", func(s *metrics.Summary) metrics.Stat { return s.Wait }, 0)
	stat("response (s)", func(s *metrics.Summary) metrics.Stat { return s.Response }, 0)
	stat("slowdown", func(s *metrics.Summary) metrics.Stat { return s.Slowdown }, 2)
	stat(fmt.Sprintf("bounded slowdown, τ=%gs", first.Metrics.Tau), func(s *metrics.Summary) metrics.Stat { return s.BoundedSlowdown }, 2)
	row("utilization", "", func(r *jss.TraceResult) string { return fmt.Sprintf("%.1f%%", 100*r.Metrics.Utilization) })
	row("makespan (s)", "", func(r *jss.TraceResult) string { return group(r.Metrics.Makespan, 0) })
	row("sum of flow times (s)", "", func(r *jss.TraceResult) string { return fmt.Sprintf("%.4e", r.Metrics.SumFlow) })
	row("weighted flow time (proc·s²)", "", func(r *jss.TraceResult) string { return fmt.Sprintf("%.4e", r.Metrics.WeightedFlow) })
	writeAligned(&b, rows, 2)
	writePFCFS(&b, results)
	writeHosts(&b, results)
	if len(first.ByRuntime) > 0 {
		b.WriteString("\nby runtime bin (dedicated runtime)\n\n")
		writeAligned(&b, binRows(results), 2)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// binRows is the table of metrics by runtime bin: a block of rows per
// non-empty bin, one column per policy.
func binRows(results []jss.TraceResult) [][]string {
	rows := [][]string{{"", ""}}
	for i := range results {
		rows[0] = append(rows[0], string(results[i].Policy))
	}
	for b := range results[0].ByRuntime {
		if results[0].ByRuntime[b].Jobs == 0 {
			continue
		}
		label := results[0].ByRuntime[b].Label
		row := func(name string, cell func(x *metrics.Bin) string) {
			cells := []string{label, name}
			label = ""
			for i := range results {
				x := &metrics.Bin{}
				if b < len(results[i].ByRuntime) {
					x = &results[i].ByRuntime[b]
				}
				cells = append(cells, cell(x))
			}
			rows = append(rows, cells)
		}
		row("jobs", func(x *metrics.Bin) string { return group(float64(x.Jobs), 0) })
		row("wait mean (s)", func(x *metrics.Bin) string { return group(x.Wait.Mean, 0) })
		row("wait p95 (s)", func(x *metrics.Bin) string { return group(x.Wait.P95, 0) })
		row("wait max (s)", func(x *metrics.Bin) string { return group(x.Wait.Max, 0) })
		row("response mean (s)", func(x *metrics.Bin) string { return group(x.Response.Mean, 0) })
		row("slowdown mean", func(x *metrics.Bin) string { return group(x.Slowdown.Mean, 2) })
		row("slowdown p95", func(x *metrics.Bin) string { return group(x.Slowdown.P95, 2) })
		row("bounded slowdown mean", func(x *metrics.Bin) string { return group(x.BoundedSlowdown.Mean, 2) })
		row("utilization", func(x *metrics.Bin) string { return fmt.Sprintf("%.1f%%", 100*x.Utilization) })
	}
	return rows
}

// writeAligned writes rows as columns separated by at least two spaces:
// the first labelCols columns left-aligned, the rest (numbers) right-aligned.
func writeAligned(b *strings.Builder, rows [][]string, labelCols int) {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < labelCols {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// group formats v with the given decimals and thousands separators:
// 1234567.891 → "1,234,567.89".
func group(v float64, decimals int) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && strings.Trim(s, "0.") != "" {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}
