package nowsim

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang/now"
	"github.com/cosched/cosched/internal/fielderr"
)

// A trace's jobs run once per seed and policy, seed by seed; a generated
// workload differs by seed. The hand-worked case of TestHandWorkedSchedules:
// fifo has makespan 9.5, fifo-bf mean flow 5.875.
func TestStudyRunsEverySeedAndPolicy(t *testing.T) {
	st := Study{
		Speeds:   []float64{1, 2, 4},
		Policies: []now.Policy{now.FIFO, now.FIFOBackfill},
		Estimate: now.EstimateSpec{Mode: now.EstimateExact},
		Seeds:    []uint64{7, 8},
		Trace:    []Job{{ID: 1, Tasks: 2, Work: 8 * s}, {ID: 2, Tasks: 3, Work: 4 * s}, {ID: 3, Tasks: 1, Work: 6 * s}, {ID: 4, Tasks: 1, Work: 2 * s}},
	}
	res, err := st.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Policy != now.FIFO || res[0].Seed != 7 || res[0].Makespan != 9.5 || res[1].MeanFlow != 5.875 || res[3].Seed != 8 || res[3].MeanFlow != res[1].MeanFlow {
		t.Fatalf("results %+v", res)
	}
	st.Trace = nil
	st.Gen = GenConfig{Nodes: 3, Jobs: 20, SeqShare: 0.5, LargeShare: 0.5, PTime: [3]Range{{s, 10 * s}, {s, 10 * s}, {s, 10 * s}}}
	res, err = st.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Jobs != 20 || res[0].Makespan == res[2].Makespan {
		t.Errorf("generated: %+v (seeds 7 and 8 should give different workloads)", res)
	}
	var b bytes.Buffer
	if err := Write(&b, "json", Table{}, res); err != nil {
		t.Fatal(err)
	}
	var back []Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || !slices.Equal(back, res) {
		t.Errorf("json read back %+v, %v", back, err)
	}
	b.Reset()
	if err := Write(&b, "csv", Table{}, res); err != nil || strings.Count(b.String(), "\n") != 5 {
		t.Errorf("csv: %v\n%s", err, b.String())
	}
	if err := Write(&b, "xml", Table{}, res); err == nil {
		t.Error("unknown format accepted")
	}
}

// A speeds file's comments; ranges keyed by their field; seeds in order.
func TestParseTextSettings(t *testing.T) {
	got, err := ParseSpeeds("# a small network\n2x1\n2, 4 # fast ones\n4 4\n")
	if want := []float64{1, 1, 2, 4, 4, 4}; err != nil || !slices.Equal(got, want) {
		t.Errorf("speeds %v, %v; want %v", got, err, want)
	}
	r, err := ParseRanges("10m-2h", [3]string{LargeParallel: "1h"})
	if want := ([3]Range{{10 * time.Minute, 2 * time.Hour}, {10 * time.Minute, 2 * time.Hour}, {time.Hour, time.Hour}}); err != nil || r != want {
		t.Errorf("ranges %v, %v; want %v", r, err, want)
	}
	_, err = ParseRanges("2h-10m", [3]string{SmallParallel: "soon"})
	var fields []string
	for _, e := range fielderr.All(err) {
		fields = append(fields, e.Field)
	}
	if !slices.Equal(fields, []string{"PTime", "PTime[small]"}) || !strings.Contains(err.Error(), `PTime[small] "soon": want LO-HI`) {
		t.Errorf("bad ranges: %v (fields %v)", err, fields)
	}
	if seeds, err := ParseSeeds("3, 1,3"); err != nil || !slices.Equal(seeds, []uint64{3, 1, 3}) {
		t.Errorf("seeds %v, %v", seeds, err)
	}
	if _, err := ParseSeeds("1,-2"); err == nil {
		t.Error("negative seed accepted")
	}
}
