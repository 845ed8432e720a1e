package main

import (
	"context"
	"strings"
	"testing"
)

// TestNumericFlagRanges: out-of-range numbers are refused before anything
// runs (or is allocated), with an error naming the flag and its limit; an
// explicit 0 is refused where 0 is not a value. The context is cancelled,
// so a value wrongly accepted shows as a run stopped at once instead of a
// flag error.
func TestNumericFlagRanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--procs", "99999999999"}, "--procs 99999999999: must be from 1 to 1048576"},
		{[]string{"sim", "--procs", "0"}, "--procs 0: must be from 1 to 1048576"},
		{[]string{"sim", "--parallel", "0"}, "--parallel 0: must be from 1 to 1024"},
		{[]string{"sim", "--tau", "0s"}, "--tau 0s: must be from 1ns to"},
		{[]string{"sim", "closed", "--procs", "99999999999", "--jobs", "2"}, "--procs 99999999999: must be from 1 to 65536"},
		{[]string{"sim", "closed", "--procs", "0"}, "--procs 0: must be from 1 to 65536"},
		{[]string{"sim", "closed", "--jobs", "2,99999999999"}, "--jobs"},
		{[]string{"sim", "closed", "--replications", "99999999999"}, "--replications 99999999999: must be from 2 to 100000"},
		{[]string{"sim", "closed", "--completions", "0"}, "--completions 0: must be from 1 to 1000000000"},
		{[]string{"sim", "now", "--jobs", "99999999999"}, "--jobs 99999999999: must be from 1 to 5000000"},
		{[]string{"sim", "now", "--speeds", "99999999999x1"}, "--speeds"},
		{[]string{"sim", "now", "--speeds", "60000x1,60000x2"}, "more than 65536 nodes"},
		{[]string{"sim", "now", "--programs", "99999999999"}, "--programs 99999999999: must be from 0 to 200"},
		{[]string{"sim", "gen", "--jobs", "1000000000"}, "--jobs 1000000000: must be from 1 to 10000000"},
		{[]string{"sim", "gen", "--procs", "99999999999"}, "--procs 99999999999: must be from 1 to 1048576"},
		{[]string{"sim", "gen", "--load", "1e308"}, "--load 1e+308: must be in (0, 1000]"},
		{[]string{"sim", "fit", "--trace", "x.swf", "--procs", "99999999999"}, "--procs 99999999999"},
		{[]string{"sim", "sweep", "--procs", "99999999999"}, "--procs 99999999999: must be from 1 to 1048576"},
		{[]string{"sim", "sweep", "--jobs", "99999999999"}, "--jobs 99999999999: must be from 1 to 10000000"},
		{[]string{"sim", "sweep", "--mpl", "1,99999"}, "--mpl"},
		{[]string{"sim", "sweep", "--seed", "1,2,3,4,5,6,7,8,9,10", "--load", "0.01:1:0.01", "--mpl", "1,2,3,4,5,6,7,8,9,10",
			"--slice", "1ms,2ms,3ms,4ms,5ms,6ms,7ms,8ms,9ms,10ms", "--mem-mean", "0,1MB,2MB,3MB,4MB,5MB,6MB,7MB,8MB,9MB"}, "more than 1000000 points"},
		{[]string{"sim", "sweep", "--parallel", "99999999999"}, "--parallel 99999999999: must be from 1 to 1024"},
		{[]string{"submit", "-n", "99999999999", "-t", "1m", "--", "true"}, "-n 99999999999: must be from 1 to 1048576"},
		{[]string{"submit", "-n", "0", "-t", "1m", "--", "true"}, "-n 0: must be from 1 to 1048576"},
		{[]string{"submit", "--bench", "10ms,5ms,news,NB", "--iterations", "99999999999"}, "--iterations 99999999999"},
		{[]string{"sim", "--policy", "pfcfs", "--pfcfs-switches", "99999999999"}, "--pfcfs-switches 99999999999: must be at most 1000000"},
		{[]string{"sim", "--policy", "pfcfs", "--pfcfs-switch", "2000000h"}, "--pfcfs-switch 2000000h0m0s: must be at most 876000h"},
		{[]string{"sim", "--policy", "eqspatial", "--machine-file", "x", "--eq-interval", "2000000h"}, "--eq-interval 2000000h0m0s: must be at most 876000h"},
		{[]string{"sim", "now", "--span", "2000000h"}, "--span 2000000h0m0s: must be from 0s to 876000h"},
	} {
		var out, errb strings.Builder
		code := run(ctx, tc.args, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

func TestAgentFlagRanges(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mpl", "99999999999"}, "--mpl 99999999999: must be from 1 to 64"},
		{[]string{"--mpl", "0"}, "--mpl 0: must be from 1 to 64"},
		{[]string{"--processors", "99999999999"}, "--processors 99999999999: must be from 0 to 1048576"},
		{[]string{"--api-port", "70000"}, "--api-port 70000: must be from 0 to 65535"},
		{[]string{"--nice", "-21"}, "--nice -21: must be from -20 to 19"},
		{[]string{"--realtime-priority", "100"}, "--realtime-priority 100: must be from 0 to 99"},
		{[]string{"--controller", "--mode", "space", "--mpl", "3"}, "--mpl 3: space mode has one row"},
		{[]string{"--controller", "--slice", "100us"}, "--slice 100µs: must be from 1ms to 1h"},
		{[]string{"--controller", "--mode", "bcs", "--slice", "0s"}, "--slice 0s: must be from 1ms to 1h"},
	} {
		_, err := agentSettings(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
