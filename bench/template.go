// Package bench defines cosched's synthetic benchmark jobs: the
// ⟨g, v, comm, sync⟩ templates of the buffered-coscheduling studies, the
// named workloads built from them, and each communication pattern's
// message structure. It is pure data and parsing, shared by the simulator
// (package jss) and the benchmark ranks, so both run the same jobs.
//
// A template's process iterates: compute for a time uniform in
// (g − v/2, g + v/2), then communicate:
//
//	barrier    a global barrier, no data
//	news       exchange a message with each of the four neighbours of a 2-D
//	           torus of the job's processes (north, south, east, west)
//	transpose  send a message to every other process
//
// with sync B (blocking sends and receives, in an order that cannot
// deadlock: see Steps) or NB (all sends and receives posted at once,
// completed by a global barrier).
package bench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultMessageSize is the size of one benchmark message in bytes.
const DefaultMessageSize = 4096

// Pattern is a communication pattern.
type Pattern string

// The communication patterns.
const (
	Barrier   Pattern = "barrier"
	News      Pattern = "news"
	Transpose Pattern = "transpose"
)

// Sync is how a pattern's messages are synchronised.
type Sync string

// The synchronisation modes.
const (
	Blocking    Sync = "B"
	NonBlocking Sync = "NB"
)

// Template is a benchmark job's behaviour ⟨g, v, comm, sync⟩.
type Template struct {
	Grain     time.Duration // g: mean compute time per iteration
	Imbalance time.Duration // v: compute times are uniform in (g − v/2, g + v/2)
	Pattern   Pattern
	Sync      Sync
}

// ParseTemplate reads "G,V,COMM,SYNC", e.g. "50ms,25ms,news,NB". G and V
// are Go durations; bare numbers are milliseconds, as in the papers'
// tables ("50,25,news,NB"). COMM and SYNC are case-insensitive.
func ParseTemplate(s string) (Template, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return Template{}, fmt.Errorf("bench: template %q: want G,V,COMM,SYNC (e.g. 50ms,25ms,news,NB)", s)
	}
	var t Template
	var errs []error
	var err error
	if t.Grain, err = parseMillis(parts[0]); err != nil {
		errs = append(errs, fmt.Errorf("grain %q: %w", parts[0], err))
	}
	if t.Imbalance, err = parseMillis(parts[1]); err != nil {
		errs = append(errs, fmt.Errorf("imbalance %q: %w", parts[1], err))
	}
	t.Pattern = Pattern(strings.ToLower(strings.TrimSpace(parts[2])))
	t.Sync = Sync(strings.ToUpper(strings.TrimSpace(parts[3])))
	if len(errs) == 0 {
		if err := t.Validate(); err != nil {
			return Template{}, fmt.Errorf("bench: template %q: %w", s, err)
		}
		return t, nil
	}
	if err := t.validateKinds(); err != nil {
		errs = append(errs, err)
	}
	return Template{}, fmt.Errorf("bench: template %q: %w", s, errors.Join(errs...))
}

func parseMillis(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (e.g. 50ms) or a number of milliseconds")
	}
	return d, nil
}

// Validate reports every problem with the template.
func (t Template) Validate() error {
	var errs []error
	if t.Grain <= 0 {
		errs = append(errs, fmt.Errorf("grain %v must be positive", t.Grain))
	}
	if t.Imbalance < 0 || t.Imbalance > 2*t.Grain {
		errs = append(errs, fmt.Errorf("imbalance %v must be between 0 and 2g (%v), so compute times stay non-negative", t.Imbalance, 2*t.Grain))
	}
	if err := t.validateKinds(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (t Template) validateKinds() error {
	var errs []error
	switch t.Pattern {
	case Barrier, News, Transpose:
	default:
		errs = append(errs, fmt.Errorf("unknown pattern %q (valid: barrier, news, transpose)", t.Pattern))
	}
	switch t.Sync {
	case Blocking, NonBlocking:
	default:
		errs = append(errs, fmt.Errorf("unknown sync %q (valid: B, NB)", t.Sync))
	}
	return errors.Join(errs...)
}

// String returns the canonical form, which ParseTemplate reads back.
func (t Template) String() string {
	return fmt.Sprintf("%v,%v,%s,%s", t.Grain, t.Imbalance, t.Pattern, t.Sync)
}

// ComputeTime maps u, uniform in [0, 1), to a compute time uniform in
// (g − v/2, g + v/2).
func (t Template) ComputeTime(u float64) time.Duration {
	return t.Grain - t.Imbalance/2 + time.Duration(u*float64(t.Imbalance))
}
