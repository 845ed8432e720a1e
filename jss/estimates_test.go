package jss_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/jss"
)

// The estimate scenarios on four jobs, by hand (runtime, request, status):
//
//	job 1: 100 s, 200 s, completed   actual 100, +20% 120, abort 100
//	job 2:  50 s, 600 s, failed      actual  50, +20%  60, abort 600
//	job 3:  30 s, 900 s, cancelled   actual  30, +20%  36, abort 900
//	job 4:  10 s,  -1,   failed      actual  10, +20%  12, abort 10 (no request)
func TestEstimateScenarios(t *testing.T) {
	line := func(num, run, reqTime, status string) string {
		return strings.Join([]string{num, "0", "-1", run, "2", "-1", "-1", "2", reqTime, "-1", status, "1", "-1", "-1", "-1", "-1", "-1", "-1"}, " ")
	}
	trace := strings.Join([]string{
		line("1", "100", "200", "1"),
		line("2", "50", "600", "0"),
		line("3", "30", "900", "5"),
		line("4", "10", "-1", "0"),
	}, "\n") + "\n"
	s := time.Second
	for _, tc := range []struct {
		conv string
		want []time.Duration
	}{
		{"requested", []time.Duration{200 * s, 600 * s, 900 * s, 10 * s}},
		{"exact", []time.Duration{100 * s, 50 * s, 30 * s, 10 * s}},
		{"actual", []time.Duration{100 * s, 50 * s, 30 * s, 10 * s}},
		{"actual+20%", []time.Duration{120 * s, 60 * s, 36 * s, 12 * s}},
		{"actual+0%", []time.Duration{100 * s, 50 * s, 30 * s, 10 * s}},
		{"abort", []time.Duration{100 * s, 600 * s, 900 * s, 10 * s}},
	} {
		e, err := jss.ParseEstimate(tc.conv)
		if err != nil {
			t.Fatalf("%s: %v", tc.conv, err)
		}
		conv := jss.DefaultConventions()
		conv.Estimate = e
		jobs := readAll(t, newSource(t, trace, 4, conv, false))
		for i, j := range jobs {
			if j.Estimate != tc.want[i] || j.Runtime != []time.Duration{100 * s, 50 * s, 30 * s, 10 * s}[i] {
				t.Errorf("%s: job %d estimate %v runtime %v, want estimate %v", tc.conv, j.Number, j.Estimate, j.Runtime, tc.want[i])
			}
		}
	}
	for _, bad := range []string{"actual+", "actual+x%", "actual+-5%", "actual+20", "guess"} {
		if _, err := jss.ParseEstimate(bad); err == nil {
			t.Errorf("ParseEstimate(%q): no error", bad)
		}
	}
}
