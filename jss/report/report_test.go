package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
)

func sampleResults() []jss.TraceResult {
	return []jss.TraceResult{
		{Policy: "fcfs", Trace: "t.swf", Processors: 100, ProcessorsFrom: "MaxProcs",
			Jobs: jss.SourceCounts{Read: 12, Delivered: 10, Extended: 3, Dropped: jss.Dropped{TooWide: 2}},
			Metrics: metrics.Summary{Jobs: 10, Wait: metrics.Stat{Mean: 1234567.891, Median: 5, P95: 9, Max: 10},
				Slowdown: metrics.Stat{Mean: 2.5}, Utilization: 0.6875, Makespan: 3600, SumFlow: 1e9, WeightedFlow: 2.5e14, Tau: 10}},
		{Policy: "easy", Trace: "t.swf", Processors: 100, ProcessorsFrom: "MaxProcs",
			Jobs:    jss.SourceCounts{Read: 12, Delivered: 10, Extended: 3, Dropped: jss.Dropped{TooWide: 2}},
			Metrics: metrics.Summary{Jobs: 10, Wait: metrics.Stat{Mean: 42}, Utilization: 0.7, Tau: 10}},
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"trace    t.swf",
		"machine  100 processors (from MaxProcs)",
		"jobs     12 read, 10 simulated, 2 dropped",
		"dropped  2 wider than the machine (--procs)",
		"overrun  3 jobs ran past their estimate",
		"1,234,568", // mean wait, grouped, no decimals
		"68.8%",     // utilization
		"2.5000e+14",
		"bounded slowdown, τ=10s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Policies head their columns, in the order given, right-aligned.
	lines := strings.Split(out, "\n")
	var head string
	for _, l := range lines {
		if strings.Contains(l, "fcfs") {
			head = l
			break
		}
	}
	if !strings.HasSuffix(head, "easy") || strings.Index(head, "fcfs") > strings.Index(head, "easy") {
		t.Errorf("header row %q: want fcfs then easy, right-aligned", head)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "wait (s)") && !strings.HasSuffix(l, "42") {
			t.Errorf("numbers not right-aligned to the column end: %q", l)
		}
	}
}

func TestJSONRoundTrips(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "json", sampleResults()); err != nil {
		t.Fatal(err)
	}
	var back []jss.TraceResult
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].Metrics.Wait.Mean != 1234567.891 || back[0].Jobs.Dropped.TooWide != 2 || back[1].Policy != "easy" {
		t.Fatalf("decoded %+v", back)
	}
	if !strings.Contains(b.String(), `"wait_s"`) || !strings.Contains(b.String(), `"too_wide": 2`) {
		t.Errorf("JSON field names: %s", b.String())
	}
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "csv", sampleResults()); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want header + 2", len(rows))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for name, want := range map[string]string{
		"policy": "fcfs", "jobs_dropped": "2", "wait_s_mean": "1234567.891", "utilization": "0.6875",
		"weighted_flow": "250000000000000", "estimates_extended": "3", "slowdown_mean": "2.5",
	} {
		i, ok := col[name]
		if !ok {
			t.Errorf("no column %q in %v", name, rows[0])
			continue
		}
		if rows[1][i] != want {
			t.Errorf("%s = %q, want %q", name, rows[1][i], want)
		}
	}
	if strings.Join(rows[0], ",") != strings.Join(CSVColumns(), ",") {
		t.Errorf("header differs from CSVColumns")
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Write(&bytes.Buffer{}, "xml", nil)
	if err == nil || !strings.Contains(err.Error(), "table, json, csv") {
		t.Fatalf("err = %v", err)
	}
}

func TestGroup(t *testing.T) {
	for _, c := range []struct {
		v    float64
		dec  int
		want string
	}{
		{0, 0, "0"}, {999, 0, "999"}, {1000, 0, "1,000"}, {1234567.891, 2, "1,234,567.89"},
		{-1234.5, 1, "-1,234.5"}, {-0.0001, 0, "0"}, {100000, 0, "100,000"},
	} {
		if got := group(c.v, c.dec); got != c.want {
			t.Errorf("group(%v, %d) = %q, want %q", c.v, c.dec, got, c.want)
		}
	}
}
