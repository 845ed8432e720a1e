package nowsim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
)

// MaxNodes bounds a network of workstations (a slice of speeds, scanned at
// every placement).
const MaxNodes = 1 << 16

// ParseSpeeds reads node speeds: items "S" or "NxS" (N nodes of speed S)
// separated by commas or white space, at most MaxNodes nodes; # starts a
// comment that runs to the end of its line (a file of speeds).
func ParseSpeeds(text string) ([]float64, error) {
	var out []float64
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i], _, _ = strings.Cut(l, "#")
	}
	for _, item := range strings.FieldsFunc(strings.Join(lines, "\n"), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		n, sp := 1, item
		if a, b, ok := strings.Cut(item, "x"); ok {
			var err error
			if n, err = strconv.Atoi(a); err != nil || n < 1 || n > MaxNodes {
				return nil, fmt.Errorf("%q: want a node count in 1..%d before x", item, MaxNodes)
			}
			sp = b
		}
		v, err := strconv.ParseFloat(sp, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q: a speed must be a positive number", item)
		}
		if len(out)+n > MaxNodes {
			return nil, fmt.Errorf("more than %d nodes", MaxNodes)
		}
		for range n {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no nodes")
	}
	return out, nil
}

// ParseRange reads a processing-time range: "LO-HI" or a single duration.
func ParseRange(s string) (Range, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		hi = lo
	}
	a, err1 := time.ParseDuration(strings.TrimSpace(lo))
	b, err2 := time.ParseDuration(strings.TrimSpace(hi))
	if err := errors.Join(err1, err2); err != nil {
		return Range{}, fmt.Errorf("want LO-HI, e.g. 10m-2h: %w", err)
	}
	if a < 0 || b < a {
		return Range{}, errors.New("want 0 ≤ LO ≤ HI")
	}
	return Range{Lo: a, Hi: b}, nil
}

// ParseRanges reads the processing-time ranges of the classes (ParseRange):
// all is every class's, but for a class given its own in class (not
// empty). A bad range is keyed by its field (fielderr): PTime for all,
// PTime[seq], PTime[small] or PTime[large] for a class's own.
func ParseRanges(all string, class [3]string) ([3]Range, error) {
	var out [3]Range
	var errs []error
	every, err := ParseRange(all)
	if err != nil {
		errs = append(errs, fielderr.New("PTime", strconv.Quote(all), "%v", err))
	}
	for cl, s := range class {
		out[cl] = every
		if s == "" {
			continue
		}
		if out[cl], err = ParseRange(s); err != nil {
			errs = append(errs, fielderr.New("PTime["+Class(cl).String()+"]", strconv.Quote(s), "%v", err))
		}
	}
	return out, errors.Join(errs...)
}

// ParseSeeds reads comma-separated random seeds, in order, repeats kept
// (each seed is a row of results).
func ParseSeeds(list string) ([]uint64, error) {
	var out []uint64
	for _, item := range strings.Split(list, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(item), 10, 64)
		if err != nil {
			return nil, errors.New("want non-negative integers, comma-separated")
		}
		out = append(out, v)
	}
	return out, nil
}
