// Package sweep runs the simulator over a design space: every combination
// of execution mode, MPL, time slice, load, named workload and memory mean,
// each point a generated workload simulated under one configuration. Points
// are independent and deterministic, so they run in parallel, split into
// shards (for job arrays) and merge back into exactly the results of one
// run.
package sweep

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/workload"
	"github.com/cosched/cosched/sharing"
)

// Point is one configuration of a sweep.
type Point struct {
	Mode     sharing.Mode  `json:"mode"`
	MPL      int           `json:"mpl"`
	Slice    time.Duration `json:"slice_ns"`
	Load     float64       `json:"load"`
	Workload string        `json:"workload"`
	MemMean  int64         `json:"mem_mean"` // bytes per process; 0 = no memory constraint
	Jobs     int           `json:"jobs"`
	Seed     uint64        `json:"seed"`
	Policy   gang.Policy   `json:"policy"`
}

func (p Point) String() string {
	return fmt.Sprintf("%s mpl=%d slice=%v load=%g %s mem=%d jobs=%d seed=%d %s", p.Mode, p.MPL, p.Slice, p.Load, p.Workload, p.MemMean, p.Jobs, p.Seed, p.Policy)
}

// Machine holds what every point of a sweep shares.
type Machine struct {
	Processors    int
	MemoryPerProc int64
	JobSwitch     time.Duration
	ProcessSwitch time.Duration
	Network       bench.Network
	Model         workload.Model
	MeanRuntime   time.Duration // mean runtime at load 1 (see workload.Config)
	Check         bool
	// PFCFS parameterizes policy pfcfs (its Processors is ignored).
	PFCFS jss.PFCFSConfig
	// Overheads are a runtime's costs beyond the ideal models (from a
	// calibrated machine profile); zero by default.
	Overheads jss.Overheads
}

// DefaultMachine is the BCS study's machine (32 processors of 512 MB, 1 ms
// job and 100 µs process switches, 4 KB messages at 100 MB/s) with the
// built-in workload model and a 30 s mean runtime at load 1.
func DefaultMachine() Machine {
	d := jss.DefaultModelConfig(sharing.BCS)
	return Machine{
		Processors:    d.Scheduler.Machine.Processors,
		MemoryPerProc: d.Scheduler.Machine.MemoryPerProcessor,
		JobSwitch:     d.JobSwitch,
		ProcessSwitch: d.ProcessSwitch,
		Network:       d.Network,
		Model:         workload.Builtin(),
		MeanRuntime:   30 * time.Second,
	}
}

// Row is one point's results: the point, and the metrics of its run.
type Row struct {
	Index int `json:"index"` // the point's position in the expanded sweep
	Point
	SliceText string `json:"slice"` // the slice as a Go duration ("50ms")

	Simulated           int     `json:"simulated"`
	MeanResponse        float64 `json:"mean_response"` // seconds
	MeanWait            float64 `json:"mean_wait"`
	MeanExecution       float64 `json:"mean_execution"`
	MeanExecSlowdown    float64 `json:"mean_exec_slowdown"`
	MeanSlowdown        float64 `json:"mean_slowdown"`
	MeanBoundedSlowdown float64 `json:"mean_bounded_slowdown"`
	P95Response         float64 `json:"p95_response"`
	P95Wait             float64 `json:"p95_wait"`
	Makespan            float64 `json:"makespan"`
	SystemUtil          float64 `json:"system_util"`    // time-averaged fraction of matrix slots filled
	ProcessorUtil       float64 `json:"processor_util"` // fraction of processor time in useful computation
	ContextSwitches     int64   `json:"context_switches"`
	SlotReuses          int64   `json:"slot_reuses"`
	Steps               int64   `json:"steps"` // model work units (for events/s figures)
}

// Config returns the execution-model configuration of a point.
func (m Machine) Config(p Point) jss.ModelConfig {
	return jss.ModelConfig{
		Mode: p.Mode,
		Scheduler: gang.Config{
			Machine: gang.Machine{Processors: m.Processors, MemoryPerProcessor: m.MemoryPerProc},
			MPL:     p.MPL,
			Policy:  p.Policy,
		},
		Slice:         p.Slice,
		JobSwitch:     m.JobSwitch,
		ProcessSwitch: m.ProcessSwitch,
		Network:       m.Network,
		Seed:          p.Seed,
		Check:         m.Check,
		PFCFS:         m.PFCFS,
		Overheads:     m.Overheads,
	}
}

// Generator returns the workload of a point: the same for every mode, MPL,
// slice and policy, so those compare on identical jobs.
func (m Machine) Generator(p Point) (*workload.Generator, error) {
	w, err := bench.LookupWorkload(p.Workload)
	if err != nil {
		return nil, err
	}
	cfg := workload.Config{
		Model:       m.Model,
		Processors:  m.Processors,
		Jobs:        p.Jobs,
		Load:        p.Load,
		MeanRuntime: m.MeanRuntime,
		Templates:   w.Templates,
		Seed:        p.Seed,
	}
	if p.MemMean > 0 {
		cfg.MemoryMean, cfg.MemoryMax = p.MemMean, m.MemoryPerProc
	}
	return workload.NewGenerator(cfg)
}

// RunPoint simulates one point and computes its row.
func RunPoint(ctx context.Context, m Machine, p Point) (Row, error) {
	gen, err := m.Generator(p)
	if err != nil {
		return Row{}, fmt.Errorf("sweep: %v: %w", p, err)
	}
	return RunSource(ctx, m, p, gen, nil)
}

// RunSource simulates src's jobs (templated, as a generator's) under
// point p's configuration and computes the row, calling each, if not nil,
// with every job's result: RunPoint with a workload of the caller's.
func RunSource(ctx context.Context, m Machine, p Point, src jss.Source, each func(jss.Result)) (Row, error) {
	col := metrics.NewCollector(m.Processors, 0)
	st, err := jss.RunModel(ctx, m.Config(p), src, func(r jss.Result) error {
		col.Add(r.MetricsJob())
		if each != nil {
			each(r)
		}
		return nil
	})
	if err != nil {
		return Row{}, fmt.Errorf("sweep: %v: %w", p, err)
	}
	s := col.Summary()
	row := Row{
		Point:               p,
		SliceText:           p.Slice.String(),
		Simulated:           s.Jobs,
		MeanResponse:        s.Response.Mean,
		MeanWait:            s.Wait.Mean,
		MeanExecution:       s.Execution.Mean,
		MeanExecSlowdown:    s.ExecSlowdown.Mean,
		MeanSlowdown:        s.Slowdown.Mean,
		MeanBoundedSlowdown: s.BoundedSlowdown.Mean,
		P95Response:         s.Response.P95,
		P95Wait:             s.Wait.P95,
		Makespan:            s.Makespan,
		ContextSwitches:     st.Switches,
		SlotReuses:          st.Reuses,
		Steps:               st.Steps,
	}
	if s.Makespan > 0 {
		row.SystemUtil = st.SlotTime / s.Makespan
		row.ProcessorUtil = st.Compute.Seconds() / (float64(m.Processors) * s.Makespan)
	}
	return row, nil
}

// FitsSlices checks that m's costs leave every slice of spec's time-shared
// modes room for work: a gang slice must exceed the job switch, a bcs slice
// the process switch and the delivery delay (Overheads.Delivery).
func (m Machine) FitsSlices(spec Spec) error {
	for _, sl := range spec.Slices {
		switch {
		case slices.Contains(spec.Modes, sharing.Gang) && sl <= m.JobSwitch:
			return fmt.Errorf("slice %v does not exceed the profile's job switch %v", sl, m.JobSwitch)
		case slices.Contains(spec.Modes, sharing.BCS) && sl <= max(m.ProcessSwitch, m.Overheads.Delivery):
			return fmt.Errorf("slice %v does not exceed the profile's process switch %v and delivery delay %v", sl, m.ProcessSwitch, m.Overheads.Delivery)
		}
	}
	return nil
}
