package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/slurmtime"
)

// maxUserName bounds JobSpec.User (Linux login names are at most 32).
const maxUserName = 64

// JobSpec is what a user submits (POST /v1/jobs).
type JobSpec struct {
	Name string `json:"name,omitempty"`
	// User is the owner's name: the agent sets it from the authenticated
	// caller (see Owner), whatever the client sent.
	User       string   `json:"user,omitempty"`
	Command    []string `json:"command"`          // run once per rank
	Processors int      `json:"processors"`       // ranks, one per processor
	TimeLimit  Duration `json:"time_limit"`       // the runtime estimate; the job is killed (TIMEOUT) when it has run this long
	Memory     int64    `json:"memory,omitempty"` // bytes per process; 0 = no constraint
	// A benchmark job runs the agents' own `cosched bench-rank` instead of
	// Command: Bench is its ⟨g,v,comm,sync⟩ template (e.g.
	// "50ms,25ms,news,NB"), BenchIterations its iterations, BenchSeed the
	// seed of its compute draws, BenchWork "cpu" (default) or "wall".
	Bench           string `json:"bench,omitempty"`
	BenchIterations int    `json:"bench_iterations,omitempty"`
	BenchSeed       uint64 `json:"bench_seed,omitempty"`
	BenchWork       string `json:"bench_work,omitempty"`
	// Overrun is what happens at the time limit: "kill" (default: the job
	// ends as TIMEOUT) or "extend" (the limit was only an estimate for
	// backfilling; the job runs on).
	Overrun string `json:"overrun,omitempty"`
	// MPI is the process-management interface the ranks get, as srun's
	// --mpi: MPINone, MPIPMI1 (MPICH's simple PMI) or MPICosched
	// (cosched's MPI library, every message through the relays;
	// docs/mpi.md); "" takes the cluster's default.
	MPI string `json:"mpi,omitempty"`
	// Dir is the ranks' working directory (the CLI sends the one it runs
	// in); empty: the owner's home directory.
	Dir string `json:"dir,omitempty"`
	// Owner is who submitted the job: the agent sets it from the
	// authenticated caller, whatever the client sent.
	Owner *Owner `json:"owner,omitempty"`
	// Env is environment the ranks get on top of their base one (the
	// agent's, or the clean one of another user's ranks), as sbatch's
	// --export: NAME=VALUE, a later one winning over an earlier one with
	// the same name; the COSCHED_* variables the agent sets win over it.
	// Only the owner and operators see it.
	Env []string `json:"env,omitempty"`
	// SubmitKey makes a submission safe to repeat: a second submission
	// with the key of a job the controller still knows returns that job's
	// id instead of queuing another. Client.Submit sets a fresh one per
	// call, so it can repeat a POST whose answer was lost (a forwarding
	// agent's 502 after the leader died, a connection cut).
	SubmitKey string `json:"submit_key,omitempty"`
}

// MaxSubmitKey bounds JobSpec.SubmitKey.
const MaxSubmitKey = 64

// Bounds on JobSpec.Env: it travels in every launch order (a control
// frame) and stays in the journal.
const (
	MaxEnvVars  = 4096
	MaxEnvBytes = 128 << 10
)

// Owner is the user a job belongs to and runs as.
type Owner struct {
	UID  uint32 `json:"uid" msgpack:"uid"`
	GID  uint32 `json:"gid" msgpack:"gid"`
	User string `json:"user" msgpack:"user"` // the login name on the controller's node, or the uid in decimal
	// Group is the group's name on the controller's node, which resolves
	// names through its NSS (LDAP, SSSD): clients show it rather than
	// look the gid up where they run. Empty when the node has no name for
	// it, and in records written before it was kept.
	Group string `json:"group,omitempty" msgpack:"group,omitempty"`
}

// MPI process-management interfaces a job can ask for (JobSpec.MPI).
const (
	MPINone = "none" // the ranks get no PMI
	MPIPMI1 = "pmi1" // MPICH's simple PMI-1 over a socketpair (PMI_FD)
	// MPICosched runs MPICH programs on cosched's own MPI library (the
	// agent puts it ahead of MPICH's): every message goes through the
	// agents' relays, buffer-coscheduled under bcs.
	MPICosched = "cosched"
	// MPIPMIx serves PMIx through OpenPMIx's server library, in a helper
	// per job and node: Open MPI programs.
	MPIPMIx = "pmix"
)

// mpiWant lists the interfaces, for errors.
const mpiWant = "want none, pmi1, pmix or cosched"

// Validate reports every problem with a spec at once, each a
// *fielderr.Error keyed by its field ("Processors"); the error's text
// names them as JSON does ("invalid job: processors: 0, must be …").
// maxProcs < 0 leaves the spec's width against the cluster's unchecked.
func (s *JobSpec) Validate(maxProcs int) error {
	var errs invalidJob
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	switch {
	case s.Bench == "" && (len(s.Command) == 0 || s.Command[0] == ""):
		bad("Command", nil, "empty")
	case s.Bench != "" && len(s.Command) > 0:
		bad("Command", nil, "a benchmark job ({Bench}) runs bench-rank, not a command")
	case s.Bench != "":
		if _, err := bench.ParseTemplate(s.Bench); err != nil {
			bad("Bench", nil, "%v", err)
		}
		if s.BenchIterations < 1 || s.BenchIterations > bench.MaxIterations {
			bad("BenchIterations", s.BenchIterations, "must be from 1 to %d", bench.MaxIterations)
		}
		if s.BenchWork != "" && s.BenchWork != "cpu" && s.BenchWork != "wall" {
			bad("BenchWork", strconv.Quote(s.BenchWork), "want cpu or wall")
		}
	}
	switch s.MPI {
	case "", MPINone:
	case MPIPMI1, MPICosched, MPIPMIx:
		if s.Bench != "" {
			bad("MPI", nil, "a benchmark job runs bench-rank, which speaks comm, not MPI")
		}
	default:
		bad("MPI", strconv.Quote(s.MPI), mpiWant)
	}
	if s.Overrun != "" && s.Overrun != "kill" && s.Overrun != "extend" {
		bad("Overrun", strconv.Quote(s.Overrun), "want kill or extend")
	}
	switch {
	case s.Processors < 1 || s.Processors > gang.MaxProcessors:
		bad("Processors", s.Processors, "must be from 1 to %d", gang.MaxProcessors)
	case maxProcs >= 0 && s.Processors > maxProcs:
		bad("Processors", s.Processors, "more than the cluster's %d processors", maxProcs)
	}
	switch {
	case s.TimeLimit.D <= 0:
		bad("TimeLimit", s.TimeLimit.D, "must be positive")
	case s.TimeLimit.D > slurmtime.Max:
		bad("TimeLimit", s.TimeLimit.D, "more than %v", slurmtime.Max)
	}
	if s.Memory < 0 {
		bad("Memory", s.Memory, "must not be negative")
	}
	if s.Dir != "" && (!strings.HasPrefix(s.Dir, "/") || len(s.Dir) > 4096) {
		bad("Dir", strconv.Quote(s.Dir), "want an absolute path of at most 4096 bytes")
	}
	if err := validEnv(s.Env); err != "" {
		bad("Env", nil, "%s", err)
	}
	if len(s.SubmitKey) > MaxSubmitKey || strings.ContainsFunc(s.SubmitKey, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		bad("SubmitKey", nil, "want at most %d printable ASCII characters", MaxSubmitKey)
	}
	if len(s.Name) > 256 {
		bad("Name", nil, "longer than 256 bytes")
	}
	if len(s.User) > maxUserName || strings.ContainsFunc(s.User, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		bad("User", strconv.Quote(s.User), "want at most %d characters, no spaces or control characters", maxUserName)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// invalidJob is Validate's error: every bad field.
type invalidJob []*fielderr.Error

// Error is the API's answer to a bad spec: each field by its JSON name,
// "name: value, reason", separated by semicolons.
func (e invalidJob) Error() string {
	msgs := make([]string, len(e))
	for i, fe := range e {
		reason := fielderr.Expand(fe.Reason, jsonName)
		if fe.Value != nil {
			reason = fmt.Sprintf("%v, %s", fe.Value, reason)
		}
		msgs[i] = jsonName(fe.Field) + ": " + reason
	}
	return "invalid job: " + strings.Join(msgs, "; ")
}

// Unwrap gives each bad field's *fielderr.Error.
func (e invalidJob) Unwrap() []error {
	errs := make([]error, len(e))
	for i, fe := range e {
		errs[i] = fe
	}
	return errs
}

// jsonName is the name JSON gives a field of JobSpec; another name is
// written as a reason writes it, {Name}, so a reason's text is kept.
func jsonName(field string) string {
	if f, ok := reflect.TypeFor[JobSpec]().FieldByName(field); ok {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return name
	}
	return "{" + field + "}"
}

// State is a job's state.
type State string

// Job states.
const (
	Pending   State = "PENDING"
	Running   State = "RUNNING"
	Completed State = "COMPLETED"
	Failed    State = "FAILED"
	Cancelled State = "CANCELLED"
	Timeout   State = "TIMEOUT"
)

// Code returns the state's two-letter code, as squeue prints them.
func (s State) Code() string {
	switch s {
	case Pending:
		return "PD"
	case Running:
		return "R"
	case Completed:
		return "CD"
	case Failed:
		return "F"
	case Cancelled:
		return "CA"
	case Timeout:
		return "TO"
	}
	return "?"
}

// Done reports whether the state is final.
func (s State) Done() bool { return s != Pending && s != Running }

// RankInfo is how one rank ran.
type RankInfo struct {
	Rank    int      `json:"rank"`
	Node    string   `json:"node"`
	PID     int      `json:"pid,omitempty"`
	Exited  bool     `json:"exited"`
	Code    int      `json:"code"`
	Signal  string   `json:"signal,omitempty"`
	CPUTime Duration `json:"cpu_time"`
	MaxRSS  int64    `json:"max_rss"`
	Error   string   `json:"error,omitempty"`
	// Bench is a benchmark rank's own report.
	Bench *BenchStats `json:"bench,omitempty"`
	// Usage is the job's accounting on this rank's node, from its cgroup:
	// carried by the last of the job's ranks there to end (nil on the
	// others, and where the agent runs without cgroups).
	Usage *NodeUsage `json:"usage,omitempty"`
}

// NodeUsage is one job's accounting on one node, from its cgroup.
type NodeUsage struct {
	CPUTime     Duration `json:"cpu_time"`               // every process of the job there
	PeakMemory  int64    `json:"peak_memory"`            // bytes
	MemoryLimit int64    `json:"memory_limit,omitempty"` // bytes; 0 = none
	Processes   int      `json:"processes"`              // the most seen at once
	OOMKills    uint64   `json:"oom_kills,omitempty"`    // processes the kernel killed over the limit
}

// BenchStats is what a benchmark rank measured of itself.
type BenchStats struct {
	Iterations int      `json:"iterations"`
	Compute    Duration `json:"compute"`   // time computing
	CommWait   Duration `json:"comm_wait"` // time blocked in communication
	Wall       Duration `json:"wall"`      // first iteration to last
}

// Duration is a time.Duration that JSON carries as a Go duration string
// ("10m", "1.5s") and that also accepts a number of seconds.
type Duration struct{ D time.Duration }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.D.String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		// The CLI's forms: Slurm's (a bare "10" is minutes) or Go's.
		v, err := slurmtime.Parse(s)
		if err != nil {
			return fmt.Errorf("duration %q: want MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or a Go duration like 10m or 90s", s)
		}
		d.D = v
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration %s: want a string like \"10m\" or a number of seconds", b)
	}
	if !(secs >= 0 && secs <= slurmtime.Max.Seconds()) {
		return fmt.Errorf("duration %s: want 0 to %v seconds", b, slurmtime.Max.Seconds())
	}
	d.D = time.Duration(secs * float64(time.Second))
	return nil
}

// validEnv says what is wrong with an environment ("" if nothing).
func validEnv(env []string) string {
	if len(env) > MaxEnvVars {
		return fmt.Sprintf("%d variables, more than %d", len(env), MaxEnvVars)
	}
	size := 0
	for _, kv := range env {
		size += len(kv) + 1
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return fmt.Sprintf("%.40q: want NAME=VALUE", kv)
		case strings.ContainsRune(kv, 0):
			return fmt.Sprintf("%.40q: contains a NUL byte", kv)
		}
	}
	if size > MaxEnvBytes {
		return fmt.Sprintf("%d bytes, more than %d", size, MaxEnvBytes)
	}
	return ""
}
