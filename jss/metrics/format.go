package metrics

import "time"

// FormatSeconds shows a time in seconds as a rounded duration, for
// tables: 3069.5 → 51m10s.
func FormatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	}
	return d.String()
}
