package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxRangeValues bounds the values one lo:hi:step range may produce, so a
// typo (0.1:1.6:0.0001) fails at once instead of planning a huge sweep.
const maxRangeValues = 10000

// ParseLoads reads a comma-separated list of loads, each item a number
// (0.8) or an inclusive range lo:hi:step (0.1:1.6:0.1 is the 16 values 0.1,
// 0.2, …, 1.6). Range values are lo + i·step rounded to the decimals of lo
// and step, so they print as written (0.3, not 0.30000000000000004), and hi
// is included when it lies on the grid up to rounding error. Repeats are
// dropped; the order is kept. Loads must be positive.
func ParseLoads(s string) ([]float64, error) {
	var out []float64
	seen := map[float64]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var vals []float64
		if strings.Contains(item, ":") {
			r, err := parseRange(item)
			if err != nil {
				return nil, err
			}
			vals = r
		} else {
			v, err := parseLoad(item)
			if err != nil {
				return nil, err
			}
			vals = []float64{v}
		}
		for _, v := range vals {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sweep: no load in %q", s)
	}
	return out, nil
}

func parseLoad(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("sweep: load %q: not a number", s)
	}
	if v <= 0 {
		return 0, fmt.Errorf("sweep: load %q: must be positive", s)
	}
	return v, nil
}

// parseRange expands lo:hi:step.
func parseRange(s string) ([]float64, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("sweep: load range %q: want lo:hi:step (e.g. 0.1:1.6:0.1)", s)
	}
	var v [3]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("sweep: load range %q: %q is not a number", s, p)
		}
		v[i] = f
	}
	lo, hi, step := v[0], v[1], v[2]
	switch {
	case lo <= 0:
		return nil, fmt.Errorf("sweep: load range %q: lo must be positive", s)
	case hi < lo:
		return nil, fmt.Errorf("sweep: load range %q: hi is below lo", s)
	case step <= 0:
		return nil, fmt.Errorf("sweep: load range %q: step must be positive", s)
	}
	// Steps up to hi, allowing for rounding error in (hi-lo)/step.
	steps := math.Floor((hi-lo)/step + 1e-9)
	if steps+1 > maxRangeValues {
		return nil, fmt.Errorf("sweep: load range %q: %.0f values, more than %d", s, steps+1, maxRangeValues)
	}
	dec := max(decimals(lo), decimals(step))
	out := make([]float64, 0, int(steps)+1)
	for i := 0; i <= int(steps); i++ {
		x := lo + float64(i)*step
		if dec >= 0 {
			x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'f', dec, 64), 64)
		}
		out = append(out, x)
	}
	return out, nil
}

// decimals returns the fewest decimal places that represent x exactly as
// parsed (0.1 → 1, 0.25 → 2, 3 → 0), or -1 when more than 12 are needed,
// in which case range values are left unrounded.
func decimals(x float64) int {
	for d := 0; d <= 12; d++ {
		if y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', d, 64), 64); y == x {
			return d
		}
	}
	return -1
}
