package pfcfs

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
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

// MaxSwitches bounds Switches, the context switches of an episode.
const MaxSwitches = 1_000_000

// MaxDuration bounds Delay and Switch (a century, written 876000h in
// messages): beyond it, sums of times overflow time.Duration.
const MaxDuration = 100 * 365 * 24 * time.Hour

// Validate reports every problem with the configuration at once, each in
// the core's words ("switches must be at least 1, got 0") and keyed by its
// field (fielderr.All finds them: Processors, WidePercent, Delay, Switch,
// Switches), so that a caller can name the fields its own way.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, value any, format string, args ...any) {
		errs = append(errs, problem{fielderr.New(field, value, format, args...)})
	}
	if c.Processors < 1 {
		bad("Processors", c.Processors, "must be at least 1")
	}
	if !(c.WidePercent > 0 && c.WidePercent <= 100) || math.IsNaN(c.WidePercent) {
		bad("WidePercent", c.WidePercent, "must be a percentage in (0, 100]")
	}
	for _, d := range []struct {
		field    string
		v        time.Duration
		positive bool
	}{{"Delay", c.Delay, false}, {"Switch", c.Switch, true}} {
		switch {
		case d.positive && d.v <= 0:
			bad(d.field, d.v, "must be positive")
		case d.v < 0:
			bad(d.field, d.v, "must not be negative")
		case d.v > MaxDuration:
			bad(d.field, d.v, "must be at most %dh", MaxDuration/time.Hour)
		}
	}
	if c.Switches < 1 {
		bad("Switches", c.Switches, "must be at least 1")
	} else if c.Switches > MaxSwitches {
		bad("Switches", c.Switches, "must be at most %d", MaxSwitches)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("pfcfs: invalid config: %w", errors.Join(errs...))
}

// problem is a bad field told in the core's words; it unwraps to the
// field's fielderr.Error.
type problem struct{ field *fielderr.Error }

// fieldWords names the fields in the core's messages.
var fieldWords = map[string]string{"Processors": "processors", "WidePercent": "wide percent", "Delay": "start delay",
	"Switch": "time between switches", "Switches": "switches"}

func (p problem) Error() string {
	return fmt.Sprintf("%s %s, got %v", fieldWords[p.field.Field], p.field.Reason, p.field.Value)
}

func (p problem) Unwrap() error { return p.field }

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
