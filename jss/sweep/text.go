package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/workload"
	"github.com/cosched/cosched/sharing"
)

// MaxParallel bounds the points simulated at once: workers beyond a few
// per core only hold memory.
const MaxParallel = 1024

// Text is a sweep as a command line or a job script writes it: every list
// comma-separated (loads also as ranges, ParseLoads), sizes with units.
type Text struct {
	Modes, MPLs, Slices, Loads, Workloads, MemMeans, Seeds string
	Jobs                                                   int
	Policy                                                 string
	Shard                                                  string
	Out                                                    string // the results' directory: required with a shard
	Parallel                                               int
	Procs                                                  int
	MemPerProc                                             string
	MeanRuntime                                            time.Duration
	Check                                                  bool
	MsgSize, Bandwidth                                     string
	Latency, JobSwitch, ProcessSwitch                      time.Duration
	PFCFS                                                  jss.PFCFSConfig // used with policy pfcfs
}

// Parse reads t into a sweep, its shard and its machine, reporting every
// problem at once as fielderr.Errors keyed by t's fields; warnings, keyed
// the same way, are the former mode names read.
func (t Text) Parse() (Spec, Shard, Machine, []*fielderr.Error, error) {
	spec, warnings, errs := t.grid()
	memPerProc, memErr := textvalue.Size(t.MemPerProc)
	if memErr != nil {
		errs = append(errs, fielderr.New("MemPerProc", strconv.Quote(t.MemPerProc), "%v", memErr))
	} else if memPerProc < 1 {
		errs = append(errs, fielderr.New("MemPerProc", strconv.Quote(t.MemPerProc), "must be positive"))
	}
	var e []error
	spec.MemMeans, e = textvalue.List("MemMeans", t.MemMeans, func(s string) (int64, error) {
		n, err := textvalue.Size(s)
		if err == nil && memErr == nil && n > memPerProc {
			err = fmt.Errorf("no room: more than {MemPerProc} %s, a processor's memory", t.MemPerProc)
		}
		return n, err
	})
	errs = append(errs, e...)
	spec.Jobs = t.Jobs
	errs = appendRange(errs, "Jobs", int64(t.Jobs), 1, workload.MaxJobs)
	spec.Seeds, e = textvalue.List("Seeds", t.Seeds, func(s string) (uint64, error) {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, errors.New("not a non-negative integer")
		}
		return n, nil
	})
	errs = append(errs, e...)
	errs = append(errs, t.policyOf(&spec)...)
	shard, err := ParseShard(t.Shard)
	if err != nil {
		errs = append(errs, fielderr.New("Shard", strconv.Quote(t.Shard), "want k/n with 1 ≤ k ≤ n, e.g. 2/4"))
	}
	if t.Out == "" && err == nil && !shard.Whole() {
		errs = append(errs, fielderr.New("Out", nil, "required with {Shard}: shards are written to be merged"))
	}
	if spec.Bound() > MaxPoints {
		errs = append(errs, fielderr.Several(" × ", []fielderr.Term{{Field: "Workloads"}, {Field: "MemMeans"}, {Field: "Loads"},
			{Field: "Seeds"}, {Field: "Modes"}, {Field: "MPLs"}, {Field: "Slices"}}, "more than %d points", MaxPoints))
	}
	errs = appendRange(errs, "Parallel", int64(t.Parallel), 1, MaxParallel)
	m, mErrs := t.machine(spec, memPerProc)
	if errs = append(errs, mErrs...); len(errs) > 0 {
		return spec, shard, Machine{}, warnings, errors.Join(errs...)
	}
	return spec, shard, m, warnings, spec.Validate() // a backstop: the text was checked above
}

// grid parses the lists of modes, MPLs, slices, loads and workloads.
func (t Text) grid() (Spec, []*fielderr.Error, []error) {
	var spec Spec
	var warnings []*fielderr.Error
	var errs, e []error
	spec.Modes, errs = textvalue.List("Modes", t.Modes, func(s string) (sharing.Mode, error) {
		m, former, err := sharing.ParseFormer(s)
		if err != nil || jss.CheckMode(m) != nil {
			return "", errors.New("unknown mode (valid: space, gang, bcs)")
		}
		if former {
			warnings = append(warnings, fielderr.New("Modes", nil, "%s", sharing.FormerWarning(s, m)))
		}
		return m, nil
	})
	spec.MPLs, e = textvalue.List("MPLs", t.MPLs, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, errors.New("not an integer")
		}
		if n < 1 || n > gang.MaxMPL {
			return 0, fmt.Errorf("must be from 1 to %d", gang.MaxMPL)
		}
		return n, nil
	})
	errs = append(errs, e...)
	spec.Slices, e = textvalue.List("Slices", t.Slices, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("not a duration (e.g. 50ms)")
		}
		if d <= 0 {
			return 0, errors.New("must be positive")
		}
		return d, nil
	})
	errs = append(errs, e...)
	loads, err := ParseLoads(t.Loads)
	if err != nil {
		errs = append(errs, fielderr.New("Loads", nil, "%s", strings.TrimPrefix(err.Error(), "sweep: ")))
	}
	spec.Loads = loads
	spec.Workloads, e = textvalue.List("Workloads", t.Workloads, func(s string) (string, error) {
		w, err := bench.LookupWorkload(s)
		if err != nil {
			return "", fmt.Errorf("unknown workload (valid: %s)", WorkloadNames())
		}
		return w.Name, nil
	})
	return spec, warnings, append(errs, e...)
}

// WorkloadNames lists the named benchmark workloads, comma-separated.
func WorkloadNames() string {
	var names []string
	for _, w := range bench.Workloads() {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}

// policyOf resolves the policy into spec: the matrix core's, or pfcfs with
// mode space only.
func (t Text) policyOf(spec *Spec) []error {
	if p, err := gang.ParsePolicy(t.Policy); err == nil {
		spec.Policy = p
		return nil
	}
	info, err := jss.LookupPolicy(t.Policy)
	switch {
	case err == nil && info.Engine == jss.EnginePFCFS:
		spec.Policy = jss.PolicyPFCFS
		for _, m := range spec.Modes {
			if m != sharing.Space {
				return []error{fielderr.New("Policy", jss.PolicyPFCFS, "space sharing, runs with {Modes} space only (got {Modes} %s)", m)}
			}
		}
		return nil
	case err == nil && info.Policy == jss.PolicyEQSpatial:
		return []error{fielderr.New("Policy", jss.PolicyEQSpatial, "runs on hosts of a machine file in cosched sim only; sweep points are homogeneous-matrix modes")}
	}
	return []error{fielderr.New("Policy", strconv.Quote(t.Policy), "unknown policy (valid: %s)", jss.PolicyNames())}
}

// machine checks the machine's settings and returns the machine.
func (t Text) machine(spec Spec, memPerProc int64) (Machine, []error) {
	errs := appendRange(nil, "Procs", int64(t.Procs), 1, gang.MaxProcessors)
	if t.MeanRuntime < 0 || t.MeanRuntime > jss.MaxDuration {
		errs = append(errs, fielderr.New("MeanRuntime", t.MeanRuntime, "must be from 0s to %dh", jss.MaxDuration/time.Hour))
	}
	msgSize, err := textvalue.Size(t.MsgSize)
	if err != nil || msgSize < 1 {
		errs = append(errs, fielderr.New("MsgSize", strconv.Quote(t.MsgSize), "want a positive size (e.g. 4KiB)"))
	}
	bandwidth, err := textvalue.Size(t.Bandwidth)
	if err != nil || bandwidth < 1 {
		errs = append(errs, fielderr.New("Bandwidth", strconv.Quote(t.Bandwidth), "want a positive size per second (e.g. 100MB)"))
	}
	for _, d := range []fielderr.Term{{Field: "Latency", Value: t.Latency}, {Field: "JobSwitch", Value: t.JobSwitch}, {Field: "ProcessSwitch", Value: t.ProcessSwitch}} {
		if d.Value.(time.Duration) < 0 {
			errs = append(errs, fielderr.New(d.Field, d.Value, "must not be negative"))
		}
	}
	for _, sl := range spec.Slices {
		if slices.Contains(spec.Modes, sharing.Gang) && sl <= t.JobSwitch {
			errs = append(errs, fielderr.New("Slices", sl, "must exceed {JobSwitch} %v, or gang-scheduled jobs make no progress", t.JobSwitch))
		}
		if slices.Contains(spec.Modes, sharing.BCS) && sl <= t.ProcessSwitch {
			errs = append(errs, fielderr.New("Slices", sl, "must exceed {ProcessSwitch} %v, or processes make no progress", t.ProcessSwitch))
		}
	}
	m := DefaultMachine()
	m.Processors, m.MemoryPerProc, m.MeanRuntime, m.Check = t.Procs, memPerProc, t.MeanRuntime, t.Check
	m.Network = bench.Network{MessageSize: int(msgSize), Bandwidth: float64(bandwidth), Latency: t.Latency}
	m.JobSwitch, m.ProcessSwitch = t.JobSwitch, t.ProcessSwitch
	if spec.Policy == jss.PolicyPFCFS {
		m.PFCFS = t.PFCFS
	}
	return m, errs
}

// appendRange appends an error naming field if v is outside lo..hi.
func appendRange(errs []error, field string, v, lo, hi int64) []error {
	if v < lo || v > hi {
		return append(errs, fielderr.New(field, v, "must be from %d to %d", lo, hi))
	}
	return errs
}
