package sweep

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/ctxio"
	"github.com/cosched/cosched/sharing"
)

// Results is the content of a results file: a whole sweep or one shard.
type Results struct {
	Spec    Spec        `json:"spec"`
	Machine MachineInfo `json:"machine"`
	Shard   string      `json:"shard"` // "k/n", or "" for the whole sweep
	Total   int         `json:"total"` // points in the whole sweep
	Rows    []Row       `json:"rows"`  // sorted by Index
	// Warnings name what a file read held in a former form (the mode names
	// bf and bgs), read as today's; never written.
	Warnings []string `json:"-"`
}

// MachineInfo records the parts of a Machine that shape the results, so
// that shards run on different machines are not merged. (Machine.Check only
// verifies the run and is left out.)
type MachineInfo struct {
	Processors    int           `json:"processors"`
	MemoryPerProc int64         `json:"memory_per_proc"` // bytes
	JobSwitch     time.Duration `json:"job_switch_ns"`
	ProcessSwitch time.Duration `json:"process_switch_ns"`
	MessageSize   int           `json:"message_size"` // bytes
	Bandwidth     float64       `json:"bandwidth"`    // bytes per second per node
	Latency       time.Duration `json:"latency_ns"`
	MeanRuntime   time.Duration `json:"mean_runtime_ns"` // mean runtime at load 1
	Model         string        `json:"model"`           // what the workload model was fitted to
	ModelSHA256   string        `json:"model_sha256"`    // first 16 hex digits of the model's JSON digest
	PFCFS         *PFCFSInfo    `json:"pfcfs,omitempty"` // policy pfcfs's parameters, when set
	// Overheads are the calibrated overheads, when any is set.
	Overheads *OverheadsInfo `json:"overheads,omitempty"`
}

// OverheadsInfo records jss.Overheads in results files.
type OverheadsInfo struct {
	Launch   time.Duration `json:"launch_ns"`
	Delivery time.Duration `json:"delivery_ns"`
	SoloSync bool          `json:"solo_sync"`
	// The relays' network (zero: the machine's).
	RelayMessageSize int           `json:"relay_message_size"`
	RelayBandwidth   float64       `json:"relay_bandwidth"`
	RelayLatency     time.Duration `json:"relay_latency_ns"`
	ComputeScale     float64       `json:"compute_scale"`
}

// Info describes m for results files.
func (m Machine) Info() MachineInfo {
	info := MachineInfo{
		Processors:    m.Processors,
		MemoryPerProc: m.MemoryPerProc,
		JobSwitch:     m.JobSwitch,
		ProcessSwitch: m.ProcessSwitch,
		MessageSize:   m.Network.MessageSize,
		Bandwidth:     m.Network.Bandwidth,
		Latency:       m.Network.Latency,
		MeanRuntime:   m.MeanRuntime,
		Model:         m.Model.Source,
		PFCFS:         m.pfcfsInfo(),
	}
	if o := m.Overheads; !o.IsZero() {
		info.Overheads = &OverheadsInfo{Launch: o.Launch, Delivery: o.Delivery, SoloSync: o.SoloSync, RelayMessageSize: o.Relay.MessageSize,
			RelayBandwidth: o.Relay.Bandwidth, RelayLatency: o.Relay.Latency, ComputeScale: o.ComputeScale}
	}
	if data, err := json.Marshal(m.Model); err == nil {
		sum := sha256.Sum256(data)
		info.ModelSHA256 = hex.EncodeToString(sum[:8])
	}
	return info
}

// CSVHeader returns the columns of the CSV results, in order.
func CSVHeader() []string {
	return []string{
		"index", "mode", "mpl", "slice", "load", "workload", "mem_mean", "jobs", "seed", "policy",
		"simulated", "mean_response", "mean_wait", "mean_execution", "mean_exec_slowdown",
		"mean_slowdown", "mean_bounded_slowdown", "p95_response", "p95_wait", "makespan",
		"system_util", "processor_util", "context_switches", "slot_reuses",
	}
}

// csvRecord renders a row in CSVHeader's columns: the slice as a Go
// duration ("0s" for space), times in seconds, floats in their shortest exact
// form.
func csvRecord(r Row) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := strconv.Itoa
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{
		i(r.Index), string(r.Mode), i(r.MPL), r.Slice.String(), f(r.Load), r.Workload,
		i64(r.MemMean), i(r.Jobs), strconv.FormatUint(r.Seed, 10), string(r.Policy),
		i(r.Simulated), f(r.MeanResponse), f(r.MeanWait), f(r.MeanExecution), f(r.MeanExecSlowdown),
		f(r.MeanSlowdown), f(r.MeanBoundedSlowdown), f(r.P95Response), f(r.P95Wait), f(r.Makespan),
		f(r.SystemUtil), f(r.ProcessorUtil), i64(r.ContextSwitches), i64(r.SlotReuses),
	}
}

// WriteCSV writes a header line and one line per row.
func (r *Results) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return fmt.Errorf("sweep: write CSV: %w", err)
	}
	for _, row := range r.Rows {
		if err := cw.Write(csvRecord(row)); err != nil {
			return fmt.Errorf("sweep: write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("sweep: write CSV: %w", err)
	}
	return nil
}

// WriteJSON writes the results as one JSON object, each row on a line of
// its own (readable, and diffs stay row by row).
func (r *Results) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	field := func(name string, v any, last bool) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %q: %s", name, data)
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		return nil
	}
	b.WriteString("{\n")
	if err := field("spec", r.Spec, false); err != nil {
		return fmt.Errorf("sweep: write JSON: %w", err)
	}
	if err := field("machine", r.Machine, false); err != nil {
		return fmt.Errorf("sweep: write JSON: %w", err)
	}
	_ = field("shard", r.Shard, false)
	_ = field("total", r.Total, false)
	b.WriteString("  \"rows\": [")
	for i, row := range r.Rows {
		data, err := json.Marshal(row)
		if err != nil {
			return fmt.Errorf("sweep: write JSON: row %d: %w", row.Index, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(data)
	}
	if len(r.Rows) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("sweep: write JSON: %w", err)
	}
	return nil
}

// Decode reads results written by WriteJSON and checks that they are
// consistent: a valid shard, rows sorted by index within 0…Total−1.
func Decode(rd io.Reader) (*Results, error) {
	var r Results
	dec := json.NewDecoder(bufio.NewReader(rd))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("sweep: not a results file: %w", err)
	}
	r.Warnings = r.renameFormerModes()
	if _, err := ParseShard(r.Shard); err != nil {
		return nil, err
	}
	if r.Total < 0 {
		return nil, fmt.Errorf("sweep: total %d: must not be negative", r.Total)
	}
	for i, row := range r.Rows {
		if row.Index < 0 || row.Index >= r.Total {
			return nil, fmt.Errorf("sweep: row index %d: outside 0-%d", row.Index, r.Total-1)
		}
		if i > 0 && row.Index <= r.Rows[i-1].Index {
			return nil, fmt.Errorf("sweep: row index %d after %d: rows must be sorted by index, each once", row.Index, r.Rows[i-1].Index)
		}
	}
	return &r, nil
}

// ReadFile reads a results JSON file; it stops when ctx is cancelled.
func ReadFile(ctx context.Context, path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	defer f.Close()
	r, err := Decode(ctxio.Reader(ctx, f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, w := range r.Warnings {
		r.Warnings[i] = path + ": " + w
	}
	return r, nil
}

// renameFormerModes reads the modes' former names (bf, bgs), which files
// written before the runtime and the simulator shared one spelling hold,
// as today's, and returns a warning for each name found.
func (r *Results) renameFormerModes() []string {
	found := map[string]sharing.Mode{}
	rename := func(m *sharing.Mode) {
		if now, former, err := sharing.ParseFormer(string(*m)); err == nil && former {
			found[string(*m)] = now
			*m = now
		}
	}
	for i := range r.Spec.Modes {
		rename(&r.Spec.Modes[i])
	}
	for i := range r.Rows {
		rename(&r.Rows[i].Mode)
	}
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(found)) {
		warnings = append(warnings, sharing.FormerWarning(name, found[name]))
	}
	return warnings
}

// WriteFiles writes DIR/BASE.json and DIR/BASE.csv, BASE being the shard's
// FileBase ("results" or "shard-k-of-n"), creating dir if needed. Each file
// is written to a temporary name and renamed into place when complete, so
// an interrupted write leaves no partial file. It returns the paths written.
func (r *Results) WriteFiles(dir string) ([]string, error) {
	shard, err := ParseShard(r.Shard)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	base := filepath.Join(dir, shard.FileBase())
	var js, cs bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		return nil, err
	}
	if err := r.WriteCSV(&cs); err != nil {
		return nil, err
	}
	// CSV first: the JSON is what merge and plot read, so it lands last.
	paths := []string{base + ".csv", base + ".json"}
	for i, data := range [][]byte{cs.Bytes(), js.Bytes()} {
		if err := atomicfile.WriteFile(paths[i], data); err != nil {
			return nil, err
		}
	}
	return []string{paths[1], paths[0]}, nil
}
