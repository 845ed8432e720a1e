package pfcfs

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Name is the policy's name wherever policies are selected by name.
const Name = "pfcfs"

// Config configures a Scheduler.
type Config struct {
	// Processors is the machine size in columns.
	Processors int
	// WidePercent is x: a job needing at least x % of Processors is wide.
	// It must lie in (0, 100].
	WidePercent float64
	// Delay is δ: how long a wide job waits, once it is first in the queue
	// and no earlier wide job is active, before it preempts.
	Delay time.Duration
	// Switch is Δ: the time between context switches of an episode.
	Switch time.Duration
	// Switches is n: the most context switches of an episode, the first
	// preemption included. Odd: the wide job finally runs to completion;
	// even: the preempted jobs do.
	Switches int
}

// DefaultConfig returns the defaults for a machine of the given size: wide
// from 50 %, no start delay, 10 minutes between switches, 3 switches.
func DefaultConfig(processors int) Config {
	return Config{Processors: processors, WidePercent: 50, Switch: 10 * time.Minute, Switches: 3}
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Processors < 1 {
		errs = append(errs, fmt.Errorf("processors must be at least 1, got %d", c.Processors))
	}
	if !(c.WidePercent > 0 && c.WidePercent <= 100) || math.IsNaN(c.WidePercent) {
		errs = append(errs, fmt.Errorf("wide percent must be in (0, 100], got %g", c.WidePercent))
	}
	if c.Delay < 0 {
		errs = append(errs, fmt.Errorf("start delay must not be negative, got %v", c.Delay))
	}
	if c.Switch <= 0 {
		errs = append(errs, fmt.Errorf("time between switches must be positive, got %v", c.Switch))
	}
	if c.Switches < 1 {
		errs = append(errs, fmt.Errorf("switches must be at least 1, got %d", c.Switches))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("pfcfs: invalid config: %w", errors.Join(errs...))
}

// Wide reports whether a job of the given size is wide.
func (c Config) Wide(processors int) bool {
	return float64(processors)*100 >= c.WidePercent*float64(c.Processors)
}

// WideFrom returns the smallest wide job size.
func (c Config) WideFrom() int {
	n := int(math.Ceil(c.WidePercent * float64(c.Processors) / 100))
	for n > 1 && c.Wide(n-1) { // guard against rounding up past the threshold
		n--
	}
	for !c.Wide(n) {
		n++
	}
	return max(n, 1)
}
