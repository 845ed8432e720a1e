// Package slurmtime reads time limits as Slurm writes them (sbatch -t):
// MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM and D-HH:MM:SS, and Go durations
// (90s, 1h30m). It is the one parser for every limit the CLI takes, so a
// user's Slurm habits work wherever a limit is given.
package slurmtime

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Max is the longest limit accepted: about 290 years overflow a
// time.Duration; a century is far beyond any job.
const Max = 100 * 365 * 24 * time.Hour

// Parse reads a time limit. A bare number is minutes, as in Slurm. The
// result is positive or zero; the caller decides whether zero is allowed.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty time limit")
	}
	if d, err := parseSlurm(s); err == nil {
		return d, nil
	} else if !strings.ContainsAny(s, "hmsuµn") {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("time limit %q: want MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or a Go duration (90s, 1h30m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("time limit %q: negative", s)
	}
	if d > Max {
		return 0, fmt.Errorf("time limit %q: more than %v", s, Max)
	}
	return d, nil
}

// parseSlurm reads the Slurm forms.
func parseSlurm(s string) (time.Duration, error) {
	bad := fmt.Errorf("time limit %q: want MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or a Go duration (90s, 1h30m)", s)
	var days int64
	rest := s
	hasDays := false
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := number(d)
		if err != nil {
			return 0, bad
		}
		days, rest, hasDays = n, r, true
	}
	parts := strings.Split(rest, ":")
	nums := make([]int64, len(parts))
	for i, p := range parts {
		n, err := number(p)
		if err != nil {
			return 0, bad
		}
		nums[i] = n
	}
	var h, m, sec int64
	switch {
	case hasDays && len(nums) == 1: // D-HH
		h = nums[0]
	case hasDays && len(nums) == 2: // D-HH:MM
		h, m = nums[0], nums[1]
	case hasDays && len(nums) == 3: // D-HH:MM:SS
		h, m, sec = nums[0], nums[1], nums[2]
	case len(nums) == 1: // MM
		m = nums[0]
	case len(nums) == 2: // MM:SS
		m, sec = nums[0], nums[1]
	case len(nums) == 3: // HH:MM:SS
		h, m, sec = nums[0], nums[1], nums[2]
	default:
		return 0, bad
	}
	const maxSeconds = int64(Max / time.Second)
	total := float64(days)*86400 + float64(h)*3600 + float64(m)*60 + float64(sec)
	if total > float64(maxSeconds) {
		return 0, fmt.Errorf("time limit %q: more than %v", s, Max)
	}
	return time.Duration(days*86400+h*3600+m*60+sec) * time.Second, nil
}

// number reads a non-negative decimal of at most 9 digits (no sign, no
// spaces), so no part can overflow.
func number(s string) (int64, error) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// Format writes d as Slurm shows a limit: M:SS, H:MM:SS or D-HH:MM:SS,
// whole seconds.
func Format(d time.Duration) string {
	s := int64(d / time.Second)
	days, h, m, sec := s/86400, s/3600%24, s/60%60, s%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, sec)
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}
