package experiment

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// Run is a whole experiment: the workload, how it was run, and each
// mode's measured and simulated results. It is what results.json holds.
type Run struct {
	Workload    string        `json:"workload"`
	Jobs        int           `json:"jobs"`
	Load        float64       `json:"load"`
	Nodes       int           `json:"nodes"` // processors
	Slice       time.Duration `json:"slice_ns"`
	MPL         int           `json:"mpl"`
	Policy      string        `json:"policy"`
	MeanRuntime time.Duration `json:"mean_runtime_ns"`
	Work        string        `json:"work"`
	Seed        uint64        `json:"seed"`
	// Cluster says where it ran: "local" (agents started for each mode)
	// or the API address of an existing cluster.
	Cluster string `json:"cluster"`
	// Machine is the simulated machine's costs (defaults, or a profile's).
	Machine MachineCosts `json:"machine"`
	// Profile is the machine profile the simulated side used (--profile).
	Profile      *ProfileRef `json:"profile,omitempty"`
	Started      time.Time   `json:"started"`
	WorkloadJobs []Job       `json:"workload_jobs"`
	// MPIPrograms is the --mpi-programs file the workload came from, and
	// MPIModels each program's calibration and model ("" and nil for a
	// benchmark workload).
	MPIPrograms string            `json:"mpi_programs,omitempty"`
	MPIModels   []MPIProgramModel `json:"mpi_models,omitempty"`
	Modes       []ModeResult      `json:"modes"`
}

// ProfileRef is a machine profile a run simulated with, and its file.
type ProfileRef struct {
	Path string `json:"path"`
	*profile.Profile
}

// MachineCosts are the costs the simulator charged, for the record.
type MachineCosts struct {
	JobSwitch     time.Duration `json:"job_switch_ns"`
	ProcessSwitch time.Duration `json:"process_switch_ns"`
	Bandwidth     float64       `json:"bandwidth_bytes_per_s"`
	Latency       time.Duration `json:"latency_ns"`
	MessageSize   int           `json:"message_size"`
}

// CostsOf returns m's costs.
func CostsOf(m sweep.Machine) MachineCosts {
	return MachineCosts{JobSwitch: m.JobSwitch, ProcessSwitch: m.ProcessSwitch, Bandwidth: m.Network.Bandwidth,
		Latency: m.Network.Latency, MessageSize: m.Network.MessageSize}
}

// ModeResult is one mode's measured run and the simulator's prediction
// for the same jobs.
type ModeResult struct {
	Mode sharing.Mode `json:"mode"`
	// Label names an arm of the run that has its own slice or MPL
	// ("bcs-2ms", "gang-10ms-mpl3"), so that one run can compare a mode
	// at several settings; "" when the arm is the mode at the run's.
	Label   string        `json:"label,omitempty"`
	Slice   time.Duration `json:"slice_ns,omitempty"` // the arm's (time-shared modes)
	MPL     int           `json:"mpl,omitempty"`      // the arm's
	Summary Summary       `json:"summary"`
	Nodes   NodeTotals    `json:"nodes"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// HostLoad is this host's 1-minute load average as the mode started
	// and ended (local clusters share the host with everything else).
	HostLoad  [2]float64 `json:"host_load"`
	Error     string     `json:"error,omitempty"`
	Simulated *sweep.Row `json:"simulated,omitempty"`
	// SimJobs is every job's simulated run, for the figures.
	SimJobs []SimJob `json:"simulated_jobs,omitempty"`
	Jobs    []Record `json:"jobs"`
}

// Name is the arm's label, or its mode: how tables, figures and the
// results directory (NAME/jobs.csv) call it.
func (m ModeResult) Name() string {
	if m.Label != "" {
		return m.Label
	}
	return string(m.Mode)
}

// NodeTotals sums the agents' counters at the end of a mode's run.
type NodeTotals struct {
	SlotReuses     uint64 `json:"slot_reuses"`
	Transferred    uint64 `json:"relay_transferred"`
	Deferred       uint64 `json:"relay_deferred"`
	Delivered      uint64 `json:"relay_delivered"`
	StrobesLost    uint64 `json:"strobes_lost"`
	HeartbeatWaits uint64 `json:"heartbeat_waits"`
}

// CollectNodeTotals sums the counters of every agent the controller
// behind c knows (best effort: an agent that does not answer is left out).
func CollectNodeTotals(ctx context.Context, c *api.Client) (NodeTotals, error) {
	var t NodeTotals
	rep, err := c.Nodes(ctx, true)
	if err != nil {
		return t, err
	}
	for _, n := range rep.Nodes {
		st := n.Stats
		if st == nil {
			continue
		}
		t.SlotReuses += st.SlotReuses
		t.Transferred += st.Relay.Transferred
		t.Deferred += st.Relay.Deferred
		t.Delivered += st.Relay.Delivered
		t.HeartbeatWaits += st.Relay.HeartbeatWaits
		t.StrobesLost += st.Strobe.Lost
	}
	return t, nil
}

// Comparison is one metric of one mode, measured and simulated.
type Comparison struct {
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"` // "s", "" (a ratio) or "%"
	Measured  float64 `json:"measured"`
	Simulated float64 `json:"simulated"` // NaN when not simulated
}

// RelError is (simulated − measured) / measured, NaN when either is
// missing or measured is 0.
func (c Comparison) RelError() float64 {
	if math.IsNaN(c.Simulated) || math.IsNaN(c.Measured) || c.Measured == 0 {
		return math.NaN()
	}
	return (c.Simulated - c.Measured) / c.Measured
}

// Compared is the metrics the report compares, in order: mean response,
// mean wait, mean execution slowdown and processor utilization. The
// measured values are those of the Summary, computed from the per-job
// records.
func (m ModeResult) Compared() []Comparison {
	s := m.Summary
	sim := func(get func(*sweep.Row) float64) float64 {
		if m.Simulated == nil {
			return math.NaN()
		}
		return get(m.Simulated)
	}
	return []Comparison{
		{"mean response", "s", s.Metrics.Response.Mean, sim(func(r *sweep.Row) float64 { return r.MeanResponse })},
		{"mean wait", "s", s.Metrics.Wait.Mean, sim(func(r *sweep.Row) float64 { return r.MeanWait })},
		{"mean execution slowdown", "", s.Metrics.ExecSlowdown.Mean, sim(func(r *sweep.Row) float64 { return r.MeanExecSlowdown })},
		{"processor utilization", "%", 100 * s.ProcessorUtil, sim(func(r *sweep.Row) float64 { return 100 * r.ProcessorUtil })},
	}
}

// ResponseError is the simulated mean response's error relative to the
// measured one (NaN without both).
func (m ModeResult) ResponseError() float64 {
	if m.Summary.Completed == 0 {
		return math.NaN()
	}
	return m.Compared()[0].RelError()
}

// WriteResults writes dir/results.json (all of run) and dir/results.csv
// (a row per mode).
func WriteResults(dir string, run *Run) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("experiment: results: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n')); err != nil {
		return err
	}
	var sb strings.Builder
	w := csv.NewWriter(&sb)
	w.Write([]string{"mode", "jobs", "completed", "mean_response_s", "mean_wait_s", "mean_exec_slowdown", "mean_slowdown", "mean_bounded_slowdown",
		"makespan_s", "processor_util", "slot_reuses", "sim_mean_response_s", "sim_mean_wait_s", "sim_mean_exec_slowdown", "sim_makespan_s", "sim_processor_util",
		"response_rel_error", "error"})
	f := func(x float64) string {
		if math.IsNaN(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', 4, 64)
	}
	for _, m := range run.Modes {
		s := m.Summary
		sim := func(get func(*sweep.Row) float64) string {
			if m.Simulated == nil {
				return ""
			}
			return f(get(m.Simulated))
		}
		w.Write([]string{m.Name(), strconv.Itoa(s.Jobs), strconv.Itoa(s.Completed), f(s.Metrics.Response.Mean), f(s.Metrics.Wait.Mean),
			f(s.Metrics.ExecSlowdown.Mean), f(s.Metrics.Slowdown.Mean), f(s.Metrics.BoundedSlowdown.Mean), f(s.Metrics.Makespan), f(s.ProcessorUtil),
			strconv.FormatUint(m.Nodes.SlotReuses, 10),
			sim(func(r *sweep.Row) float64 { return r.MeanResponse }), sim(func(r *sweep.Row) float64 { return r.MeanWait }),
			sim(func(r *sweep.Row) float64 { return r.MeanExecSlowdown }), sim(func(r *sweep.Row) float64 { return r.Makespan }),
			sim(func(r *sweep.Row) float64 { return r.ProcessorUtil }), f(m.ResponseError()), m.Error})
	}
	w.Flush()
	return atomicfile.WriteFile(filepath.Join(dir, "results.csv"), []byte(sb.String()))
}

// WriteRecordsCSV writes recs as MODE/jobs.csv does: one line per job.
func WriteRecordsCSV(path string, recs []Record) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"seq", "id", "state", "processors", "template", "iterations", "runtime_s", "dedicated_s", "estimate_s",
		"submit_s", "start_s", "end_s", "wait_s", "response_s", "compute_s", "comm_wait_s", "reason"})
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
	opt := func(d time.Duration) string {
		if d < 0 {
			return ""
		}
		return sec(d)
	}
	for _, r := range recs {
		wait, resp := time.Duration(-1), time.Duration(-1)
		if r.Start >= 0 {
			wait = r.Start - r.Submit
		}
		if r.End >= 0 {
			resp = r.End - r.Submit
		}
		w.Write([]string{strconv.Itoa(r.Seq), strconv.FormatInt(r.ID, 10), string(r.State), strconv.Itoa(r.Processors), r.Template,
			strconv.Itoa(r.Iterations), sec(r.Runtime), sec(r.Dedicated), sec(r.Estimate), sec(r.Submit), opt(r.Start), opt(r.End), opt(wait), opt(resp),
			sec(r.Compute), sec(r.CommWait), r.Reason})
	}
	w.Flush()
	return atomicfile.WriteFile(path, []byte(b.String()))
}

// WriteTable prints the measured-versus-simulated table, each cell
// "measured/simulated", then the verdict. wide prints a column per
// measured and per simulated value, with more metrics, instead.
func WriteTable(out io.Writer, run *Run, wide bool) {
	if run.MPIPrograms != "" {
		fmt.Fprintf(out, "\n%d jobs of %d MPI programs, %d nodes, slice %v, MPL %d%s: ", run.Jobs, len(run.MPIModels), run.Nodes, run.Slice, run.MPL, armsNote(run))
	} else {
		fmt.Fprintf(out, "\n%s, %d jobs, load %g, %d nodes, slice %v, MPL %d, %s work: ", run.Workload, run.Jobs, run.Load, run.Nodes, run.Slice, run.MPL, run.Work)
	}
	if wide {
		fmt.Fprintf(out, "measured (meas) and simulated (sim)\n\n")
	} else {
		fmt.Fprintf(out, "measured/simulated (error of the mean response)\n\n")
	}
	if run.Profile != nil {
		fmt.Fprintf(out, "(simulated with the machine profile %s)\n\n", run.Profile.Path)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if wide {
		writeWideRows(tw, run)
	} else {
		writeRows(tw, run)
	}
	tw.Flush()
	for _, m := range run.Modes {
		if m.Error != "" {
			fmt.Fprintf(out, "%s: %s\n", m.Name(), m.Error)
		}
	}
	if lines := Decide(run.Modes).Lines(); len(lines) > 0 {
		fmt.Fprintf(out, "\n%s\n", strings.Join(lines, "\n"))
	}
}

// simOr formats x, or "-" when it is NaN (not simulated, or not measured).
func simOr(x float64, format string) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

// simValue is get of m's simulated row, NaN when m was not simulated.
func simValue(m ModeResult, get func(*sweep.Row) float64) float64 {
	if m.Simulated == nil {
		return math.NaN()
	}
	return get(m.Simulated)
}

func writeRows(tw io.Writer, run *Run) {
	fmt.Fprintln(tw, "mode\tdone\tmean response\tmean slowdown\tmakespan\tmean wait\tproc util\t")
	for _, m := range run.Modes {
		s := m.Summary
		c := m.Compared()
		errText := ""
		if e := m.ResponseError(); !math.IsNaN(e) {
			errText = fmt.Sprintf(" (%+.0f%%)", 100*e)
		}
		// No job done, no measured figure: "-", not a slowdown of 0.
		meas := func(x float64) float64 {
			if s.Completed == 0 {
				return math.NaN()
			}
			return x
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%s/%ss%s\t%s/%s\t%s/%ss\t%s/%ss\t%s/%s%%\t\n", m.Name(), s.Completed, s.Jobs,
			simOr(meas(c[0].Measured), "%.2f"), simOr(c[0].Simulated, "%.2f"), errText,
			simOr(meas(s.Metrics.Slowdown.Mean), "%.2f"), simOr(simValue(m, func(r *sweep.Row) float64 { return r.MeanSlowdown }), "%.2f"),
			simOr(meas(s.Metrics.Makespan), "%.1f"), simOr(simValue(m, func(r *sweep.Row) float64 { return r.Makespan }), "%.1f"),
			simOr(meas(c[1].Measured), "%.2f"), simOr(c[1].Simulated, "%.2f"),
			simOr(meas(c[3].Measured), "%.0f"), simOr(c[3].Simulated, "%.0f"))
	}
}

func writeWideRows(tw io.Writer, run *Run) {
	fmt.Fprintln(tw, "mode\tdone\tresponse meas\tsim\terror\twait meas\tsim\texec slowdown meas\tsim\tslowdown meas\tsim\tmakespan meas\tsim\tproc util meas\tsim\tslot reuses\t")
	for _, m := range run.Modes {
		s := m.Summary
		c := m.Compared()
		errText := "-"
		if e := m.ResponseError(); !math.IsNaN(e) {
			errText = fmt.Sprintf("%+.0f%%", 100*e)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.2fs\t%s\t%s\t%.2fs\t%s\t%.2f\t%s\t%.2f\t%s\t%.1fs\t%s\t%.1f%%\t%s\t%d\t\n", m.Name(), s.Completed, s.Jobs,
			c[0].Measured, simOr(c[0].Simulated, "%.2fs"), errText, c[1].Measured, simOr(c[1].Simulated, "%.2fs"),
			c[2].Measured, simOr(c[2].Simulated, "%.2f"),
			s.Metrics.Slowdown.Mean, simOr(simValue(m, func(r *sweep.Row) float64 { return r.MeanSlowdown }), "%.2f"),
			s.Metrics.Makespan, simOr(simValue(m, func(r *sweep.Row) float64 { return r.Makespan }), "%.1fs"),
			c[3].Measured, simOr(c[3].Simulated, "%.1f%%"), m.Nodes.SlotReuses)
	}
}

// WriteAll writes the run's files into dir (WriteResults, WriteReport),
// then prints its table (WriteTable) and where the files are to out.
func WriteAll(out io.Writer, dir string, run *Run, wide bool) error {
	if err := WriteResults(dir, run); err != nil {
		return err
	}
	report, err := WriteReport(dir, run)
	if err != nil {
		return err
	}
	WriteTable(out, run, wide)
	_, err = fmt.Fprintf(out, "\nreport: %s; per-job records: %s/MODE/jobs.csv; metrics: %s/results.csv, %s/results.json\n", report, dir, dir, dir)
	return err
}
