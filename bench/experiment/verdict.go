package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// Verdict is a run's conclusion: on each headline metric (all lower is
// better), which mode did best and by how much, measured and simulated,
// and whether the simulator ranked the modes as the cluster did.
type Verdict struct {
	Metrics []MetricVerdict `json:"metrics"`
	// Left out are the modes that did not complete every job: their
	// figures would flatter them.
	LeftOut []sharing.Mode `json:"left_out,omitempty"`
}

// MetricVerdict ranks the modes on one metric.
type MetricVerdict struct {
	Metric    string      `json:"metric"`
	Unit      string      `json:"unit"`                // "s" or "" (a ratio)
	Measured  []ModeValue `json:"measured"`            // best first
	Simulated []ModeValue `json:"simulated,omitempty"` // best first; nil when a mode was not simulated
}

// ModeValue is one mode's value of a metric.
type ModeValue struct {
	Mode  sharing.Mode `json:"mode"` // or the arm's label (ModeResult.Name)
	Value float64      `json:"value"`
}

// Agreement says how the simulated ranking compares with the measured one.
type Agreement int

// Agreements, from the best.
const (
	NotSimulated Agreement = iota // no simulated ranking to compare
	SameRanking                   // the same order of every mode
	SameWinner                    // the same best mode, another order after it
	OtherWinner                   // another best mode
	OnlyOneMode                   // one mode: nothing to rank
)

// verdictMetrics are the headline metrics, each read from a measured
// summary and a simulated row.
var verdictMetrics = []struct {
	name, unit string
	measured   func(Summary) float64
	simulated  func(*sweep.Row) float64
}{
	{"mean response", "s", func(s Summary) float64 { return s.Metrics.Response.Mean }, func(r *sweep.Row) float64 { return r.MeanResponse }},
	{"mean slowdown", "", func(s Summary) float64 { return s.Metrics.Slowdown.Mean }, func(r *sweep.Row) float64 { return r.MeanSlowdown }},
	{"makespan", "s", func(s Summary) float64 { return s.Metrics.Makespan }, func(r *sweep.Row) float64 { return r.Makespan }},
}

// Decide ranks modes on mean response, mean slowdown and makespan, from
// the modes that completed every job. It is a pure function of modes.
func Decide(modes []ModeResult) Verdict {
	var v Verdict
	var ok []ModeResult
	for _, m := range modes {
		if m.Error != "" || m.Summary.Jobs == 0 || m.Summary.Completed < m.Summary.Jobs {
			v.LeftOut = append(v.LeftOut, sharing.Mode(m.Name()))
			continue
		}
		ok = append(ok, m)
	}
	if len(ok) == 0 {
		return v
	}
	for _, vm := range verdictMetrics {
		mv := MetricVerdict{Metric: vm.name, Unit: vm.unit}
		simulated := true
		for _, m := range ok {
			mv.Measured = append(mv.Measured, ModeValue{sharing.Mode(m.Name()), vm.measured(m.Summary)})
			if m.Simulated == nil || math.IsNaN(vm.simulated(m.Simulated)) {
				simulated = false
			} else {
				mv.Simulated = append(mv.Simulated, ModeValue{sharing.Mode(m.Name()), vm.simulated(m.Simulated)})
			}
		}
		if !simulated {
			mv.Simulated = nil
		}
		rank(mv.Measured)
		rank(mv.Simulated)
		v.Metrics = append(v.Metrics, mv)
	}
	return v
}

// rank orders vs best (lowest) first; equal values keep their order.
func rank(vs []ModeValue) {
	slices.SortStableFunc(vs, func(a, b ModeValue) int {
		switch {
		case a.Value < b.Value:
			return -1
		case a.Value > b.Value:
			return 1
		}
		return 0
	})
}

// Agreement compares the simulated ranking with the measured one.
func (mv MetricVerdict) Agreement() Agreement {
	switch {
	case len(mv.Measured) < 2:
		return OnlyOneMode
	case mv.Simulated == nil:
		return NotSimulated
	case mv.Simulated[0].Mode != mv.Measured[0].Mode:
		return OtherWinner
	}
	for i := range mv.Measured {
		if mv.Simulated[i].Mode != mv.Measured[i].Mode {
			return SameWinner
		}
	}
	return SameRanking
}

// Margin is how much higher other is than best, as a fraction of best:
// 0.07 for 4.94 against 4.61. It is 0 when best is 0.
func Margin(best, other float64) float64 {
	if best == 0 {
		return 0
	}
	return (other - best) / best
}

// Lines renders the verdict for a terminal or a report: a headline, then
// one line per metric. Empty when no mode completed.
func (v Verdict) Lines() []string {
	if len(v.Metrics) == 0 {
		if len(v.LeftOut) > 0 {
			return []string{fmt.Sprintf("verdict: none (no mode completed every job: %s)", modeList(v.LeftOut))}
		}
		return nil
	}
	lines := []string{"verdict: " + v.Headline()}
	width := 0
	for _, mv := range v.Metrics {
		width = max(width, len(mv.Metric))
	}
	for _, mv := range v.Metrics {
		lines = append(lines, fmt.Sprintf("  %-*s  %s", width, mv.Metric, mv.Text()))
	}
	if len(v.LeftOut) > 0 {
		lines = append(lines, fmt.Sprintf("  (left out, not every job completed: %s)", modeList(v.LeftOut)))
	}
	return lines
}

// Headline names each metric's measured winner and how often the
// simulator picked the same one. v must have metrics.
func (v Verdict) Headline() string {
	if len(v.Metrics[0].Measured) < 2 {
		return fmt.Sprintf("only %s ran; nothing to compare", v.Metrics[0].Measured[0].Mode)
	}
	byMode := map[sharing.Mode][]string{}
	var order []sharing.Mode
	for _, mv := range v.Metrics {
		w := mv.Measured[0].Mode
		if byMode[w] == nil {
			order = append(order, w)
		}
		byMode[w] = append(byMode[w], mv.Metric)
	}
	var wins []string
	for _, m := range order {
		wins = append(wins, fmt.Sprintf("%s wins %s", m, andList(byMode[m])))
	}
	agree, simulated := 0, 0
	for _, mv := range v.Metrics {
		switch mv.Agreement() {
		case SameRanking, SameWinner:
			agree++
			simulated++
		case OtherWinner:
			simulated++
		}
	}
	s := strings.Join(wins, ", ")
	switch {
	case simulated == 0:
		return s + "; not simulated"
	case agree == simulated:
		return s + "; simulated: the same winners"
	case agree == 0:
		return s + "; simulated: another winner on every metric"
	}
	return s + fmt.Sprintf("; simulated: the same winner on %d of %d", agree, simulated)
}

// Text is one metric's verdict: the measured winner's value and how much
// higher the others are, then the same simulated, and how the two
// rankings compare.
func (mv MetricVerdict) Text() string {
	s := ranking(mv.Measured, mv.Unit)
	if mv.Simulated == nil {
		return s
	}
	s += " | simulated: " + ranking(mv.Simulated, mv.Unit)
	switch mv.Agreement() {
	case SameRanking:
		s += " (same ranking)"
	case SameWinner:
		s += " (same winner, other order)"
	case OtherWinner:
		s += " (another winner)"
	}
	return s
}

// ranking is "gang 4.61 s, space +7 %, bcs +14 %" for vs best first.
func ranking(vs []ModeValue, unit string) string {
	parts := []string{fmt.Sprintf("%s %s", vs[0].Mode, valueShort(vs[0].Value, unit))}
	for _, o := range vs[1:] {
		parts = append(parts, fmt.Sprintf("%s %+.0f %%", o.Mode, 100*Margin(vs[0].Value, o.Value)))
	}
	return strings.Join(parts, ", ")
}

func valueShort(x float64, unit string) string {
	if unit == "s" {
		return fmt.Sprintf("%.3g s", x)
	}
	return fmt.Sprintf("%.3g", x)
}

func andList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func modeList(ms []sharing.Mode) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}
