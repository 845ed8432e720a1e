// Package profile is a machine profile: what `cosched bench calibrate`
// measured on a cluster (slice switching, the relays, job launch, BCS
// delivery), written as versioned JSON, and its mapping onto the
// simulator's machine (Apply), so that `cosched bench run --profile` and
// `cosched sim sweep --profile` simulate the cluster that was measured.
// It imports the simulator's packages only, never the runtime's.
package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
)

// Version is the profile format this package writes and reads.
const Version = 1

// Profile is a calibrated machine. Durations are integers in nanoseconds
// (fields ending in _ns), bandwidths in bytes per second.
type Profile struct {
	Version int       `json:"version"`
	Created time.Time `json:"created"` // RFC 3339
	Host    Host      `json:"host"`
	Cluster Cluster   `json:"cluster"`
	// Measured is what the calibration measured; Apply maps it onto the
	// simulator's machine.
	Measured Measured `json:"measured"`
}

// Host describes the machine the calibration ran on.
type Host struct {
	Hostname  string `json:"hostname"`
	Cores     int    `json:"cores"`      // logical CPUs
	GoVersion string `json:"go_version"` // of the cosched binary
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// Cluster is the cluster the calibration measured.
type Cluster struct {
	Nodes            int           `json:"nodes"` // agents of one processor
	Slice            time.Duration `json:"slice_ns"`
	MPL              int           `json:"mpl"`
	Work             string        `json:"work"`              // the ranks' compute work: cpu or wall
	RealtimePriority int           `json:"realtime_priority"` // agents' SCHED_FIFO priority (0: off)
	Bandwidth        float64       `json:"bcs_bandwidth"`     // bcs h_max per second (bytes; 0: unlimited)
}

// Measured holds the calibrated costs. Each is the mean over its samples
// unless named otherwise.
type Measured struct {
	// SwitchCost is an agent's stop-old-ranks plus continue-new-ranks at a
	// strobe (SIGSTOP/SIGCONT of the process groups): the simulator's
	// process context switch.
	SwitchCost    time.Duration `json:"switch_cost_ns"`
	SwitchCostP99 time.Duration `json:"switch_cost_p99_ns"`
	// StrobeOverhead is, per slice, the time from the slice boundary until
	// the last agent has switched to the new row: the part of a slice a
	// gang-scheduled job does not run, the simulator's job context switch.
	StrobeOverhead time.Duration `json:"strobe_overhead_ns"`
	// StrobeIdle is, per slice, the time from the boundary until the first
	// agent has switched (no rank of the new row runs before).
	StrobeIdle time.Duration `json:"strobe_idle_ns"`
	Slices     int           `json:"slices"` // slices these three were measured over

	// RelayLatency is half the mean round trip of a MessageSize message
	// between ranks on two agents (immediate mode).
	RelayLatency time.Duration `json:"relay_latency_ns"`
	// RelayBandwidth is a stream of MessageSize messages between ranks on
	// two agents, in bytes per second.
	RelayBandwidth float64 `json:"relay_bandwidth_bps"`
	MessageSize    int     `json:"message_size"` // bytes

	// Launch is a job's fixed cost: its time from start to end in the
	// cluster minus its ranks' own run time (spawn, connect, report).
	Launch time.Duration `json:"launch_ns"`
	// ComputeScale is how much longer a rank's compute phases take than
	// their drawn times (rank wall time over drawn compute, alone).
	ComputeScale float64 `json:"compute_scale"`

	// BCSDelivery is, under bcs, how long after the slice boundary a rank
	// blocked in a barrier of two agents sees it released: the effective
	// delay of the slice's deliveries (strobe, heartbeats, transfer, the
	// rank waking up).
	BCSDelivery    time.Duration `json:"bcs_delivery_ns"`
	BCSDeliveryP90 time.Duration `json:"bcs_delivery_p90_ns"`
	// BCSSoloSync reports whether, under bcs, a one-rank job's barrier
	// waits for the next strobe (as every barrier does in the runtime).
	BCSSoloSync bool `json:"bcs_solo_sync"`
	// BCSSoloPeriod is the mean time between a one-rank job's back-to-back
	// barriers under bcs (about a slice when BCSSoloSync).
	BCSSoloPeriod time.Duration `json:"bcs_solo_period_ns"`
}

// MaxFile bounds a profile file (Load): a profile is a few KiB, and a
// larger file (/dev/zero) is none.
const MaxFile = 1 << 20

// Load reads and validates the profile at path. Unknown fields are
// refused; every error names the file (and the field).
func Load(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("profile %s: more than %d KiB: not a profile", path, MaxFile>>10)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes and validates a profile.
func Parse(b []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("field %s: %s is not a valid %s", te.Field, te.Value, te.Type)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown field %s", f)
		}
		return nil, fmt.Errorf("not a profile: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a profile: data after the JSON object")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate reports every field out of its range at once, by JSON name.
func (p *Profile) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("field %s: "+format, append([]any{field}, args...)...))
	}
	if p.Version != Version {
		bad("version", "%d, want %d", p.Version, Version)
	}
	if p.Cluster.Nodes < 1 {
		bad("cluster.nodes", "%d, want at least 1", p.Cluster.Nodes)
	}
	if p.Cluster.Slice <= 0 {
		bad("cluster.slice_ns", "%d, want a positive duration", p.Cluster.Slice)
	}
	if p.Cluster.MPL < 1 {
		bad("cluster.mpl", "%d, want at least 1", p.Cluster.MPL)
	}
	m := p.Measured
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"measured.switch_cost_ns", m.SwitchCost}, {"measured.switch_cost_p99_ns", m.SwitchCostP99},
		{"measured.strobe_overhead_ns", m.StrobeOverhead}, {"measured.strobe_idle_ns", m.StrobeIdle},
		{"measured.relay_latency_ns", m.RelayLatency}, {"measured.launch_ns", m.Launch},
		{"measured.bcs_delivery_ns", m.BCSDelivery}, {"measured.bcs_delivery_p90_ns", m.BCSDeliveryP90},
		{"measured.bcs_solo_period_ns", m.BCSSoloPeriod},
	} {
		if d.v < 0 {
			bad(d.name, "%d, must not be negative", d.v)
		}
	}
	if !(m.RelayBandwidth > 0) || math.IsInf(m.RelayBandwidth, 0) {
		bad("measured.relay_bandwidth_bps", "%g, want a positive number", m.RelayBandwidth)
	}
	if m.MessageSize < 1 {
		bad("measured.message_size", "%d, want a positive size", m.MessageSize)
	}
	if !(m.ComputeScale >= 1 && m.ComputeScale <= 10) {
		bad("measured.compute_scale", "%g, want a number in [1, 10]", m.ComputeScale)
	}
	if p.Cluster.Slice > 0 && m.BCSDelivery >= p.Cluster.Slice {
		bad("measured.bcs_delivery_ns", "%v is not less than the slice %v", m.BCSDelivery, p.Cluster.Slice)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return nil
}

// Apply returns m with the profile's costs: the job context switch is the
// strobe overhead, the process context switch the agents' switch cost,
// and the overheads the relays' latency, bandwidth and message size (the
// network dedicated runs see; m.Network still picks the jobs' iterations
// and BCS's h_max, as in the runtime, where they come from the workload
// and the bandwidth setting), the launch, the compute scale, the BCS
// delivery delay and whether one-rank jobs synchronise at strobes. A cost the model cannot
// take (a delivery delay not less than a simulated slice) is clamped by
// the model's validation, not here: Apply does not know the slice.
func (p *Profile) Apply(m sweep.Machine) sweep.Machine {
	ms := p.Measured
	m.JobSwitch = ms.StrobeOverhead
	m.ProcessSwitch = ms.SwitchCost
	m.Overheads = jss.Overheads{
		Relay:        bench.Network{MessageSize: ms.MessageSize, Bandwidth: ms.RelayBandwidth, Latency: ms.RelayLatency},
		Launch:       ms.Launch,
		Delivery:     ms.BCSDelivery,
		SoloSync:     ms.BCSSoloSync,
		ComputeScale: ms.ComputeScale,
	}
	return m
}

// Marshal returns p as indented JSON.
func (p *Profile) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return append(b, '\n'), nil
}

// Save writes p to path (Marshal), atomically: a reader of path sees the
// old profile or the new one, never a part.
func (p *Profile) Save(path string) error {
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("profile: writing %s: %w", path, err)
	}
	return nil
}

// ApplyFile loads the profile at path (Load) and applies it to m for
// spec's sweep, refusing a slice of spec that the profile's costs leave
// no room for work in (sweep.Machine.FitsSlices).
func ApplyFile(path string, m sweep.Machine, spec sweep.Spec) (sweep.Machine, error) {
	p, err := Load(path)
	if err != nil {
		return m, err
	}
	m = p.Apply(m)
	if err := m.FitsSlices(spec); err != nil {
		return m, fmt.Errorf("profile %s: %w", path, err)
	}
	return m, nil
}
