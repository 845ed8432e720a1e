package sweep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/sharing"
)

// smallSpec is 18 points of 20 jobs: per load, space once and gang, bcs at
// MPL 1, 2 with slices 10 and 50 ms.
func smallSpec() Spec {
	return Spec{
		Modes:     []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS},
		MPLs:      []int{1, 2},
		Slices:    []time.Duration{10 * ms, 50 * ms},
		Loads:     []float64{0.4, 0.8},
		Workloads: []string{"w3"},
		MemMeans:  []int64{0},
		Jobs:      20,
		Seeds:     []uint64{1},
		Policy:    gang.EASY,
	}
}

func testMachine() Machine {
	m := DefaultMachine()
	m.Check = true
	return m
}

// files runs Execute and returns the bytes of its JSON and CSV files.
func files(t *testing.T, r *Results) (js, cs []byte) {
	t.Helper()
	var j, c bytes.Buffer
	if err := r.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	return j.Bytes(), c.Bytes()
}

func execute(t *testing.T, s Spec, sh Shard, parallel int) *Results {
	t.Helper()
	r, err := Execute(context.Background(), testMachine(), s, sh, parallel, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestExecuteRowsFollowTheExpansion(t *testing.T) {
	s := smallSpec()
	var calls [][2]int
	r, err := Execute(context.Background(), testMachine(), s, Shard{}, 3, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil {
		t.Fatal(err)
	}
	pts := Expand(s)
	if len(pts) != 18 || r.Total != 18 || len(r.Rows) != 18 || r.Shard != "" {
		t.Fatalf("%d points, total %d, %d rows, shard %q", len(pts), r.Total, len(r.Rows), r.Shard)
	}
	for i, row := range r.Rows {
		if row.Index != i || row.Point != pts[i] || row.SliceText != pts[i].Slice.String() {
			t.Errorf("row %d: index %d, point %v, want %v", i, row.Index, row.Point, pts[i])
		}
		if row.Simulated != 20 || !(row.MeanResponse > 0) || !(row.ProcessorUtil > 0) || row.Steps <= 0 {
			t.Errorf("row %d: implausible metrics %+v", i, row)
		}
	}
	if len(calls) != 19 || calls[0] != [2]int{0, 18} || calls[18] != [2]int{18, 18} {
		t.Errorf("progress calls %v", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] != calls[i-1][0]+1 {
			t.Errorf("progress not increasing by one: %v", calls)
		}
	}
}

func TestShardsMergeIntoTheUnshardedFiles(t *testing.T) {
	s := smallSpec()
	whole := execute(t, s, Shard{}, 2)
	wantJSON, wantCSV := files(t, whole)

	dir := t.TempDir()
	for k := 1; k <= 3; k++ {
		r := execute(t, s, Shard{k, 3}, 2)
		if r.Shard != strings.TrimSpace(Shard{k, 3}.String()) || r.Total != 18 || len(r.Rows) != 6 {
			t.Fatalf("shard %d: %q total %d rows %d", k, r.Shard, r.Total, len(r.Rows))
		}
		if _, err := r.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := ReadParts(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || filepath.Base(parts[0].Name) != "shard-1-of-3.json" {
		t.Fatalf("parts %v", parts)
	}
	// sim merge stops on SIGINT: a cancelled read names the cause.
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupted"))
	if _, err := ReadParts(cancelled, []string{dir}); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("cancelled read: %v, want the cause", err)
	}
	merged, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	paths, err := merged.WriteFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[0] != filepath.Join(out, "results.json") || paths[1] != filepath.Join(out, "results.csv") {
		t.Fatalf("paths %v", paths)
	}
	gotJSON, _ := os.ReadFile(paths[0])
	gotCSV, _ := os.ReadFile(paths[1])
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("merged JSON differs from the unsharded run:\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if !bytes.Equal(gotCSV, wantCSV) {
		t.Errorf("merged CSV differs from the unsharded run:\n%s\nwant\n%s", gotCSV, wantCSV)
	}
	// The unsharded file read back round-trips too.
	back, err := ReadFile(context.Background(), paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if js, _ := files(t, back); !bytes.Equal(js, wantJSON) {
		t.Error("results.json does not round-trip")
	}
	// ReadResults takes a file, a directory's results.json, or its shards.
	for _, in := range []string{paths[0], out, dir} {
		r, err := ReadResults(context.Background(), in)
		if err != nil {
			t.Fatalf("ReadResults(%s): %v", in, err)
		}
		if js, _ := files(t, r); !bytes.Equal(js, wantJSON) {
			t.Errorf("ReadResults(%s) differs from the unsharded run", in)
		}
	}
	if _, err := ReadResults(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "no results.json, and") {
		t.Errorf("ReadResults of an empty directory: %v", err)
	}
}

func TestSweepIsDeterministic(t *testing.T) {
	s := smallSpec()
	s.Seeds = []uint64{1, 2}
	s.Loads = []float64{0.8}
	j1, c1 := files(t, execute(t, s, Shard{}, 1))
	j2, c2 := files(t, execute(t, s, Shard{}, 4))
	if !bytes.Equal(j1, j2) || !bytes.Equal(c1, c2) {
		t.Error("two runs of the same sweep (parallel 1 and 4) differ")
	}
}

func TestCSVColumns(t *testing.T) {
	s := smallSpec()
	s.Modes, s.Loads = []sharing.Mode{sharing.Space, sharing.BCS}, []float64{0.8}
	s.MPLs, s.Slices = []int{2}, []time.Duration{50 * ms}
	_, cs := files(t, execute(t, s, Shard{}, 2))
	lines := strings.Split(strings.TrimSpace(string(cs)), "\n")
	if lines[0] != "index,mode,mpl,slice,load,workload,mem_mean,jobs,seed,policy,simulated,mean_response,mean_wait,mean_execution,mean_exec_slowdown,mean_slowdown,mean_bounded_slowdown,p95_response,p95_wait,makespan,system_util,processor_util,context_switches,slot_reuses" {
		t.Errorf("header %s", lines[0])
	}
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "0,space,1,0s,0.8,w3,0,20,1,easy,20,") || !strings.HasPrefix(lines[2], "1,bcs,2,50ms,0.8,w3,0,20,1,easy,20,") {
		t.Errorf("rows:\n%s", cs)
	}
	for _, l := range lines {
		if n := strings.Count(l, ","); n != 23 {
			t.Errorf("%d commas in %s", n, l)
		}
	}
}

func writeShards(t *testing.T, s Spec, n int, ks ...int) []Part {
	t.Helper()
	var parts []Part
	for _, k := range ks {
		parts = append(parts, Part{Name: Shard{k, n}.FileBase() + ".json", Results: execute(t, s, Shard{k, n}, 2)})
	}
	return parts
}

func TestMergeErrors(t *testing.T) {
	s := smallSpec()
	s.Loads = []float64{0.8} // 9 points

	_, err := Merge(writeShards(t, s, 3, 1, 3))
	if err == nil || !strings.Contains(err.Error(), "missing 1, 4, 7 (no input holds shard 2/3)") {
		t.Errorf("missing shard: %v", err)
	}

	parts := writeShards(t, s, 3, 1, 2, 3, 2)
	parts[3].Name = "copy.json"
	_, err = Merge(parts)
	if err == nil || !strings.Contains(err.Error(), "duplicated 1, 4, 7: in shard-2-of-3.json, copy.json") {
		t.Errorf("duplicated shard: %v", err)
	}

	whole := Part{Name: "results.json", Results: execute(t, s, Shard{}, 2)}
	_, err = Merge(append(writeShards(t, s, 2, 1), whole))
	if err == nil || !strings.Contains(err.Error(), "duplicated 0, 2, 4, 6, 8: in shard-1-of-2.json, results.json") {
		t.Errorf("shard and whole: %v", err)
	}

	other := s
	other.Jobs = 21
	parts = append(writeShards(t, s, 2, 1), Part{Name: "other.json", Results: execute(t, other, Shard{2, 2}, 2)})
	_, err = Merge(parts)
	if err == nil || !strings.Contains(err.Error(), "other.json: its spec differs from shard-1-of-2.json's: jobs 21, not 20") {
		t.Errorf("mismatched specs: %v", err)
	}

	bigger := testMachine()
	bigger.Processors = 64
	r2, err := Execute(context.Background(), bigger, s, Shard{2, 2}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Merge(append(writeShards(t, s, 2, 1), Part{Name: "big.json", Results: r2}))
	if err == nil || !strings.Contains(err.Error(), "big.json: its machine differs from shard-1-of-2.json's: processors 64, not 32") {
		t.Errorf("mismatched machines: %v", err)
	}

	if _, err := Merge(nil); err == nil {
		t.Error("no input: no error")
	}
	if _, err := ReadParts(context.Background(), []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no shard files") {
		t.Errorf("empty directory: %v", err)
	}
}

func TestDecodeRejectsInconsistentFiles(t *testing.T) {
	for _, text := range []string{
		`not json`,
		`{"shard": "3/2", "total": 1, "rows": []}`,
		`{"shard": "", "total": 1, "rows": [{"index": 1}]}`,
		`{"shard": "", "total": 3, "rows": [{"index": 1}, {"index": 1}]}`,
	} {
		if _, err := Decode(strings.NewReader(text)); err == nil || !strings.HasPrefix(err.Error(), "sweep: ") {
			t.Errorf("%s: error %v", text, err)
		}
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	s := smallSpec()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows, err := Run(ctx, testMachine(), Expand(s), 2, func(done, total int) {
		if done == 2 {
			cancel()
		}
	})
	if err == nil || !errors.Is(err, context.Canceled) || rows != nil {
		t.Fatalf("rows %d, error %v; want context.Canceled", len(rows), err)
	}
	if !strings.HasPrefix(err.Error(), "sweep: stopped after ") {
		t.Errorf("error %v", err)
	}
	if _, err := Run(ctx, testMachine(), Expand(s), 2, nil); err == nil {
		t.Error("a cancelled context ran")
	}
}

func TestRunNamesTheFailingPoint(t *testing.T) {
	pts := Expand(smallSpec())[:4]
	pts[2].Workload = "w9"
	_, err := Run(context.Background(), testMachine(), pts, 1, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "sweep: point 2 (gang mpl=1 slice=50ms load=0.4 w9 ") || !strings.Contains(err.Error(), `unknown workload "w9"`) {
		t.Errorf("error %v", err)
	}
	// In a shard, the index is the one in the whole sweep: points 9-17 ask
	// for more memory than the machine has, and shard 2/2 meets 9 first.
	s := smallSpec()
	s.Loads, s.MemMeans = []float64{0.8}, []int64{0, 600 << 20}
	_, err = Execute(context.Background(), testMachine(), s, Shard{2, 2}, 1, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "sweep: point 9 (space mpl=1 slice=0s load=0.8 w3 mem=629145600 ") {
		t.Errorf("error %v", err)
	}
	s.Policy = "lifo"
	if _, err := Execute(context.Background(), testMachine(), s, Shard{}, 1, nil); err == nil || !strings.Contains(err.Error(), "invalid spec") {
		t.Errorf("invalid spec ran: %v", err)
	}
}

func TestWriteTable(t *testing.T) {
	s := smallSpec()
	s.Modes, s.Loads, s.MPLs, s.Slices = []sharing.Mode{sharing.Space, sharing.BCS}, []float64{0.8}, []int{3}, []time.Duration{50 * ms}
	s.MemMeans = []int64{128e6}
	r := execute(t, s, Shard{}, 2)
	var b bytes.Buffer
	if err := WriteTable(&b, r.Rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range [][]string{
		{"mode", "mpl", "slice", "load", "workload", "mem", "mean_response", "mean_wait", "mean_exec_slowdown", "system_util", "processor_util"},
		{"space", "1", "-", "0.8", "w3", "128MB"},
		{"bcs", "3", "50ms", "0.8", "w3", "128MB"},
	} {
		f := strings.Fields(lines[i])
		if len(f) != 11 || strings.Join(f[:len(want)], " ") != strings.Join(want, " ") {
			t.Errorf("line %d: %q", i, lines[i])
		}
	}
	if !strings.HasSuffix(strings.Fields(lines[1])[6], "s") {
		t.Errorf("response without unit: %q", lines[1])
	}
}

func TestExecuteRecordsTheSpecWithoutRepeats(t *testing.T) {
	s := smallSpec()
	s.Modes, s.Loads, s.Seeds = []sharing.Mode{sharing.Space, sharing.Space}, []float64{0.8, 0.4, 0.8}, []uint64{3, 3}
	r := execute(t, s, Shard{}, 2)
	if len(r.Rows) != 2 || len(r.Spec.Modes) != 1 || len(r.Spec.Loads) != 2 || r.Spec.Loads[0] != 0.8 || len(r.Spec.Seeds) != 1 {
		t.Errorf("spec %+v, %d rows", r.Spec, len(r.Rows))
	}
}

// Publish lists the files it wrote and then the table; without a
// directory it prints the table and writes nothing.
func TestPublish(t *testing.T) {
	s := smallSpec()
	s.Modes, s.Loads = []sharing.Mode{sharing.Space}, []float64{0.8}
	r := execute(t, s, Shard{}, 1)
	var table, b bytes.Buffer
	if err := WriteTable(&table, r.Rows); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := r.Publish(&b, dir); err != nil {
		t.Fatal(err)
	}
	want := "wrote " + filepath.Join(dir, "results.json") + "\nwrote " + filepath.Join(dir, "results.csv") + "\n\n" + table.String()
	if b.String() != want {
		t.Errorf("Publish wrote\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := r.Publish(&b, ""); err != nil || b.String() != table.String() {
		t.Errorf("without a directory: %v\n%s", err, b.String())
	}
}
