package slurmtime

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"60", time.Hour},     // MM
		{"0", 0},              // MM
		{"1:00", time.Minute}, // MM:SS
		{"90:30", 90*time.Minute + 30*time.Second}, // MM:SS, minutes over 59
		{"1:00:00", time.Hour},                     // HH:MM:SS
		{"36:00:01", 36*time.Hour + time.Second},   // HH:MM:SS, hours over 23
		{"1-00", 24 * time.Hour},                   // D-HH
		{"2-12", 60 * time.Hour},                   // D-HH
		{"1-00:30", 24*time.Hour + 30*time.Minute}, // D-HH:MM
		{"1-00:00:00", 24 * time.Hour},             // D-HH:MM:SS
		{"0-00:00:05", 5 * time.Second},            // D-HH:MM:SS
		{"90s", 90 * time.Second},                  // Go
		{"1h30m", 90 * time.Minute},                // Go
		{"250ms", 250 * time.Millisecond},          // Go
		{" 10 ", 10 * time.Minute},                 // spaces trimmed
		{"36500-00:00:00", 36500 * 24 * time.Hour}, // the most
		{"876000h", 876000 * time.Hour},            // the most, as a Go duration
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "-1", "1:2:3:4", "1-2-3", "a", "1:x", "-5m", "1-", "-1-00", "1e3", "+5",
		"36501-00:00:00", "999999999:00:00", "1000000000", "876001h", "1.5"} {
		if d, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, d)
		} else if !strings.Contains(err.Error(), "time limit") && in != "" {
			t.Errorf("Parse(%q): %v does not say it is a time limit", in, err)
		}
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                            "0:00",
		59 * time.Second:             "0:59",
		time.Hour + 2*time.Second:    "1:00:02",
		26*time.Hour + 3*time.Minute: "1-02:03:00",
		1500 * time.Millisecond:      "0:01",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}
