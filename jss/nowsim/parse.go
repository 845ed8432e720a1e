package nowsim

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
)

// MaxNodes bounds a network of workstations (a slice of speeds, scanned at
// every placement).
const MaxNodes = 1 << 16

// MaxSpeedsFile bounds a file of speeds (ReadSpeedsFile): MaxNodes speeds
// with comments fit in far less, and a larger file (/dev/zero) is none.
const MaxSpeedsFile = 16 << 20

// ReadSpeedsFile reads the node speeds in the file at path (ParseSpeeds).
// It cannot be read: an *fs.PathError; its text is bad: an error naming
// path.
func ReadSpeedsFile(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpeedsFile+1))
	switch {
	case err != nil:
		return nil, err
	case len(data) > MaxSpeedsFile:
		return nil, fmt.Errorf("%s: more than %d MiB: not a file of speeds", path, MaxSpeedsFile>>20)
	}
	speeds, err := ParseSpeeds(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return speeds, nil
}

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
	if err := cmp.Or(err1, err2); err != nil { // one bound's error: "x" is both bounds, said once
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
