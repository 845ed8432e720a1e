// Package bytesize reads and writes memory sizes as go-humanize's
// ParseBytes and IBytes do, byte for byte (bytesize_test.go compares them
// on many inputs), without linking that package: its initialisation
// compiles a regular expression (for SI functions cosched does not use) in
// every process, a few per cent of a CLI call's start-up.
package bytesize

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
)

// binaryUnits are Format's units, by power of 1024.
var binaryUnits = [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// Format is n bytes in binary units with at least two significant digits,
// as humanize.IBytes: "9 B", "1.0 KiB", "82 MiB", "1.5 GiB".
func Format(n uint64) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	e := math.Floor(math.Log(float64(n)) / math.Log(1024))
	unit := binaryUnits[int(e)]
	val := float64(n) / math.Pow(1024, e)
	// Decimals from the unrounded value's integer digits, rounded once;
	// a carry into one more integer digit (9.996 → 10.0) drops one.
	intDigits := countDigits(int64(val))
	digits := max(2-intDigits, 0)
	rounding := math.Pow10(digits)
	val = math.Floor(val*rounding+0.5) / rounding
	if d := countDigits(int64(val)); d > intDigits {
		digits = max(digits-(d-intDigits), 0)
	}
	return fmt.Sprintf("%.*f %s", digits, val, unit)
}

func countDigits(n int64) int {
	d := 0
	for n != 0 {
		n /= 10
		d++
	}
	return d
}

// Parse reads a size as humanize.ParseBytes: a number (commas allowed,
// decimals too) then, after optional spaces, a unit in any case: none or
// b for bytes, k, kb, m, mb … e, eb for powers of 1000, ki, kib … ei, eib
// for powers of 1024. Whole numbers are exact up to 2^64-1.
func Parse(s string) (uint64, error) {
	lastDigit := 0
	hasComma := false
	for _, r := range s {
		if !(unicode.IsDigit(r) || r == '.' || r == ',') {
			break
		}
		if r == ',' {
			hasComma = true
		}
		lastDigit++
	}
	num := s[:lastDigit]
	if hasComma {
		num = strings.ReplaceAll(num, ",", "")
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	unit := strings.ToLower(strings.TrimSpace(s[lastDigit:]))
	m, ok := multiplier(unit)
	if !ok {
		return 0, fmt.Errorf("unhandled size name: %v", unit)
	}
	if !strings.ContainsRune(num, '.') {
		if v, err := strconv.ParseUint(num, 10, 64); err == nil {
			if hi, lo := bits.Mul64(v, m); hi == 0 {
				return lo, nil
			}
			return 0, fmt.Errorf("too large: %v", s)
		}
	}
	f *= float64(m)
	if f >= math.MaxUint64 {
		return 0, fmt.Errorf("too large: %v", s)
	}
	return uint64(f), nil
}

// multiplier is the number of bytes of a lower-case unit (a switch, not a
// map: no initialisation at start-up).
func multiplier(unit string) (uint64, bool) {
	switch unit {
	case "", "b":
		return 1, true
	case "k", "kb":
		return 1e3, true
	case "m", "mb":
		return 1e6, true
	case "g", "gb":
		return 1e9, true
	case "t", "tb":
		return 1e12, true
	case "p", "pb":
		return 1e15, true
	case "e", "eb":
		return 1e18, true
	case "ki", "kib":
		return 1 << 10, true
	case "mi", "mib":
		return 1 << 20, true
	case "gi", "gib":
		return 1 << 30, true
	case "ti", "tib":
		return 1 << 40, true
	case "pi", "pib":
		return 1 << 50, true
	case "ei", "eib":
		return 1 << 60, true
	}
	return 0, false
}
