package jss

import (
	"errors"
	"time"

	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/internal/fielderr"
)

// MaxDuration bounds durations that are simulated times or spans (a
// century, written 876000h in messages): beyond it, sums of them overflow
// time.Duration.
const MaxDuration = 100 * 365 * 24 * time.Hour

// MaxPFCFSSwitches bounds pfcfs's context switches per wide job.
const MaxPFCFSSwitches = pfcfs.MaxSwitches

// Validate checks the pfcfs parameters, keyed by field (fielderr:
// Scheduler.WidePercent, Scheduler.Delay, Scheduler.Switch,
// Scheduler.Switches, Penalty): the core's check (pfcfs.Config.Validate),
// and the penalty. The machine size, Scheduler.Processors, is the run's
// and is not checked here.
func (c PFCFSConfig) Validate() error {
	var errs []error
	for _, e := range fielderr.All(c.Scheduler.Validate()) {
		if e.Field != "Processors" { // the run's
			scoped := *e
			scoped.Field = "Scheduler." + e.Field
			errs = append(errs, &scoped)
		}
	}
	return errors.Join(checkDuration(errs, "Penalty", c.Penalty, false)...)
}

// Validate checks the immediate service's parameters, keyed by field
// (fielderr: Quantum, Memory, MinRun).
func (is ImmediateService) Validate() error {
	errs := checkDuration(nil, "Quantum", is.Quantum, true)
	if is.Memory < 0 {
		errs = append(errs, fielderr.New("Memory", is.Memory, "must not be negative"))
	}
	return errors.Join(checkDuration(errs, "MinRun", is.MinRun, false)...)
}

// Validate checks EQspatial's parameters, keyed by field (fielderr:
// Interval, FullAfter).
func (eq EQSpatial) Validate() error {
	return errors.Join(checkDuration(checkDuration(nil, "Interval", eq.Interval, false), "FullAfter", eq.FullAfter, false)...)
}

// checkDuration appends field's problem to errs: d negative (or, when it
// must be positive, not above 0), or above MaxDuration.
func checkDuration(errs []error, field string, d time.Duration, positive bool) []error {
	switch {
	case positive && d <= 0:
		return append(errs, fielderr.New(field, d, "must be positive"))
	case d < 0:
		return append(errs, fielderr.New(field, d, "must not be negative"))
	case d > MaxDuration:
		return append(errs, fielderr.New(field, d, "must be at most %dh", MaxDuration/time.Hour))
	}
	return errs
}
