package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
)

// Ranges of numeric flags. Every numeric flag is checked against its range
// before anything runs, with an error that names the flag and the limit: a
// mistyped 99999999999 must not be allocated, and 0 must not be ignored.

// CheckInt reports v outside lo..hi as an error naming flag, for the full
// binary's commands.
func CheckInt(flag string, v, lo, hi int64) error { return checkInt(flag, v, lo, hi) }

// checkInt reports v outside lo..hi as an error naming flag.
func checkInt(flag string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d: must be from %d to %d", flag, v, lo, hi)
	}
	return nil
}

// checkDuration reports d outside lo..hi as an error naming flag.
func checkDuration(flag string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s %v: must be from %s to %s", flag, d, shortDuration(lo), shortDuration(hi))
	}
	return nil
}

// shortDuration prints d without trailing zero units: 876000h, not
// 876000h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkProcs checks a machine size in processors against the core's limit.
func checkProcs(flag string, n int) error {
	return checkInt(flag, int64(n), 1, gang.MaxProcessors)
}

// maxSimDuration bounds durations that are simulated times or spans.
const maxSimDuration = jss.MaxDuration
