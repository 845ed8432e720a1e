package gang

import (
	"errors"
	"fmt"
	"strings"
)

// Policy names a queue policy. See the package documentation for the rules.
type Policy string

// The queue policies.
const (
	FCFS         Policy = "fcfs"
	EASY         Policy = "easy"
	EASYSJBF     Policy = "easy-sjbf"
	Conservative Policy = "conservative"
	// Priority backfill (NCSA Origin 2000 study; see priority.go).
	FCFSBF     Policy = "fcfs-bf"
	SJFBF      Policy = "sjf-bf"
	PriorityBF Policy = "priority-bf"
	LXFWBF     Policy = "lxfw-bf"
)

// Policies lists every policy the core implements, in a stable order.
func Policies() []Policy {
	return []Policy{FCFS, EASY, EASYSJBF, Conservative, FCFSBF, SJFBF, PriorityBF, LXFWBF}
}

// ParsePolicy resolves a policy name (case-insensitive). The error of an
// unknown name lists the valid ones.
func ParsePolicy(name string) (Policy, error) {
	p := Policy(strings.ToLower(strings.TrimSpace(name)))
	for _, known := range Policies() {
		if p == known {
			return p, nil
		}
	}
	return "", fmt.Errorf("gang: unknown policy %q (valid: %s)", name, PolicyNames())
}

// PolicyNames lists the policies' names, comma-separated, for help and
// errors.
func PolicyNames() string {
	names := make([]string, 0, len(Policies()))
	for _, p := range Policies() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// Config configures a Scheduler.
type Config struct {
	// Machine is the hardware being scheduled.
	Machine Machine
	// MPL is the multiprogramming level: the number of rows of the matrix.
	// 1 is space sharing. With MPL > 1 rows time-share the machine: a
	// job's estimate is dilated by MPL for reservations (each row gets at
	// least 1/MPL of the time), and queue policies are judged per row.
	MPL int
	// AlternativeScheduling lets a running job also run in the slices of
	// other rows whose slots on its columns are empty (job-level slot reuse,
	// as in backfilling gang scheduling). Changes come as Alternate and
	// AlternateEnd decisions. Only meaningful with MPL > 1.
	AlternativeScheduling bool
	// Policy orders and backfills the queue.
	Policy Policy
	// EnforceLimits makes the core emit a Kill decision for a running job
	// once it has run for its estimate, and report that instant through
	// NextWakeup. The runtime sets it; the simulator applies its own overrun
	// convention instead.
	EnforceLimits bool
	// Backfill configures the priority-backfill policies (reservation
	// depth and mode, weights); the zero value is their default.
	Backfill Backfill
}

// Limits on a machine's shape. The core keeps a bitset of columns per row,
// so a larger machine or more rows would be allocated, not refused; no
// machine this software schedules comes near them.
const (
	MaxProcessors = 1 << 20 // columns of the matrix
	MaxMPL        = 64      // rows of the matrix
)

// DefaultConfig returns a space-sharing EASY configuration for a machine of
// the given size.
func DefaultConfig(processors int) Config {
	return Config{Machine: Machine{Processors: processors}, MPL: 1, Policy: EASY}
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Machine.Processors < 1 || c.Machine.Processors > MaxProcessors {
		errs = append(errs, fmt.Errorf("machine processors must be from 1 to %d, got %d", MaxProcessors, c.Machine.Processors))
	}
	if c.Machine.MemoryPerProcessor < 0 {
		errs = append(errs, fmt.Errorf("memory per processor must not be negative, got %d", c.Machine.MemoryPerProcessor))
	}
	if c.MPL < 1 || c.MPL > MaxMPL {
		errs = append(errs, fmt.Errorf("MPL must be from 1 to %d, got %d", MaxMPL, c.MPL))
	}
	if _, err := ParsePolicy(string(c.Policy)); err != nil {
		errs = append(errs, fmt.Errorf("unknown policy %q (valid: %s)", c.Policy, PolicyNames()))
	}
	errs = append(errs, c.Backfill.validate(c.Policy)...)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("gang: invalid config: %w", errors.Join(errs...))
}
