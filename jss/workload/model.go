package workload

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// SizeProb is one job size and its probability within its class.
type SizeProb struct {
	Size int     `json:"size"`
	Prob float64 `json:"prob"`
}

// Class is one job-size class of a Model: the jobs whose size lies in
// (MaxSize/2, MaxSize], i.e. 1 | 2 | 3–4 | 5–8 | 9–16 | …
type Class struct {
	MaxSize int `json:"max_size"` // a power of two
	Jobs    int `json:"jobs"`     // jobs of the trace in this class
	// Interarrival is the time in seconds between successive arrivals of
	// jobs of this class.
	Interarrival HyperErlang `json:"interarrival"`
	// Runtime is the jobs' runtime in seconds.
	Runtime HyperErlang `json:"runtime"`
	// Sizes is the empirical distribution of sizes within the class, sorted
	// by size, sizes absent from the trace omitted. A slice rather than a
	// map so that sampling visits sizes in a fixed order.
	Sizes []SizeProb `json:"sizes"`
}

// MinSize returns the smallest size of the class.
func (c Class) MinSize() int { return c.MaxSize/2 + 1 }

// SizeRange returns the class's sizes as text: "1", "2", "3-4", "5-8", ….
func (c Class) SizeRange() string { return sizeRange(c.MaxSize) }

func sizeRange(maxSize int) string {
	if maxSize <= 2 {
		return strconv.Itoa(maxSize)
	}
	return fmt.Sprintf("%d-%d", maxSize/2+1, maxSize)
}

// ArrivalRate returns the class's arrivals per second, 1/E[interarrival].
func (c Class) ArrivalRate() float64 { return 1 / c.Interarrival.Mean() }

// MeanSize returns the mean job size of the class.
func (c Class) MeanSize() float64 {
	var m float64
	for _, s := range c.Sizes {
		m += float64(s.Size) * s.Prob
	}
	return m
}

// Validate reports every problem with the class.
func (c Class) Validate() error {
	var errs []error
	if c.MaxSize < 1 || c.MaxSize&(c.MaxSize-1) != 0 {
		errs = append(errs, fmt.Errorf("max size %d: must be a power of two", c.MaxSize))
	}
	if c.Jobs < 0 {
		errs = append(errs, fmt.Errorf("jobs %d: must not be negative", c.Jobs))
	}
	if err := c.Interarrival.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("interarrival: %w", err))
	}
	if err := c.Runtime.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("runtime: %w", err))
	}
	if len(c.Sizes) == 0 {
		errs = append(errs, errors.New("no sizes"))
	}
	sum := 0.0
	for i, s := range c.Sizes {
		if s.Size < c.MinSize() || s.Size > c.MaxSize {
			errs = append(errs, fmt.Errorf("size %d is outside the class (%s)", s.Size, c.SizeRange()))
		}
		if i > 0 && s.Size <= c.Sizes[i-1].Size {
			errs = append(errs, fmt.Errorf("sizes are not in increasing order at %d", s.Size))
		}
		if !(s.Prob >= 0 && s.Prob <= 1) {
			errs = append(errs, fmt.Errorf("size %d: probability %v is not in [0, 1]", s.Size, s.Prob))
		}
		sum += s.Prob
	}
	if len(c.Sizes) > 0 && math.Abs(sum-1) > 1e-9 {
		errs = append(errs, fmt.Errorf("size probabilities sum to %v, not 1", sum))
	}
	return errors.Join(errs...)
}

// Model is a workload model after Jann et al. (1997): per job-size class an
// independent renewal process of arrivals, a runtime distribution and an
// empirical size distribution.
type Model struct {
	// Source says what the model was fitted to.
	Source string `json:"source"`
	// Processors is the machine size of that trace.
	Processors int     `json:"processors"`
	Classes    []Class `json:"classes"`
	// Notes lists what the fit left out (classes whose runtimes are all zero).
	Notes []string `json:"notes,omitempty"`
}

// Validate reports every problem with the model, naming the classes.
func (m Model) Validate() error {
	var errs []error
	if len(m.Classes) == 0 {
		errs = append(errs, errors.New("no classes"))
	}
	for i, c := range m.Classes {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("class %s: %w", c.SizeRange(), err))
		}
		if i > 0 && c.MaxSize <= m.Classes[i-1].MaxSize {
			errs = append(errs, fmt.Errorf("class %s: classes are not in increasing order of size", c.SizeRange()))
		}
	}
	return errors.Join(errs...)
}

// OfferedLoad returns the model's offered load on a machine of processors:
// Σ_c (1/E[IA_c])·E[size_c]·E[run_c] / processors, over the classes that fit
// the machine. As in the Generator, a class's sizes above the machine are
// excluded and the rest renormalised (its arrival rate is unchanged); a
// class with no size left is dropped.
func (m Model) OfferedLoad(processors int) float64 {
	if processors < 1 {
		return 0
	}
	var work float64 // processor-seconds per second
	for _, c := range m.onMachine(processors).Classes {
		work += c.ArrivalRate() * c.MeanSize() * c.Runtime.Mean()
	}
	return work / float64(processors)
}

// MeanRuntime returns the mean runtime of the model's jobs in seconds: the
// classes' mean runtimes weighted by their arrival rates.
func (m Model) MeanRuntime() float64 {
	var rate, run float64
	for _, c := range m.Classes {
		r := c.ArrivalRate()
		rate += r
		run += r * c.Runtime.Mean()
	}
	if rate == 0 {
		return 0
	}
	return run / rate
}

// onMachine returns the model restricted to a machine of processors: sizes
// above it removed and the rest renormalised, classes with none left
// dropped. The receiver is not modified.
func (m Model) onMachine(processors int) Model {
	out := m
	out.Classes = nil
	for _, c := range m.Classes {
		var kept []SizeProb
		var sum float64
		for _, s := range c.Sizes {
			if s.Size <= processors && s.Prob > 0 {
				kept = append(kept, s)
				sum += s.Prob
			}
		}
		if len(kept) == 0 {
			continue
		}
		if len(kept) < len(c.Sizes) {
			for i := range kept {
				kept[i].Prob /= sum
			}
		}
		c.Sizes = kept
		out.Classes = append(out.Classes, c)
	}
	return out
}

// WriteJSON writes m as indented JSON, the form of builtin.json and of
// `cosched sim fit`. Characters such as < and > are written as they are.
func (m Model) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return nil
}

// builtinJSON holds the built-in model's parameters; see Builtin.
//
//go:embed builtin.json
var builtinJSON []byte

// Builtin returns the built-in model: cosched's own fit (Fit) of the
// KTH-SP2 log of the Parallel Workloads Archive (KTH-SP2-1996-2.swf, a
// 100-processor IBM SP2, 28,489 jobs), embedded as JSON. Its test re-fits
// the trace, when present, and checks the embedded parameters are exactly
// that fit.
func Builtin() Model {
	var m Model
	if err := json.Unmarshal(builtinJSON, &m); err != nil {
		// builtin.json is generated and checked by the tests; a failure here
		// is a broken build, not a runtime condition.
		panic(fmt.Sprintf("workload: embedded builtin.json: %v", err))
	}
	return m
}
