package jss_test

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/sample"
	"github.com/cosched/cosched/jss/swf"
)

// TestOverlapSameResult: a run that reads its trace ahead and sorts its
// summary's halves at once (TraceOptions.Overlap) gives the result, the
// schedule files and the errors of one that does not, on every policy
// with the check on, and on a trace that fails part way.
func TestOverlapSameResult(t *testing.T) {
	run := func(in jss.TraceInput, p gang.Policy, overlap bool) (jss.TraceResult, string, error) {
		var out bytes.Buffer
		res, err := jss.SimulatePolicy(context.Background(), jss.TraceOptions{Input: in, Conventions: jss.DefaultConventions(),
			Tau: metrics.DefaultTau, Check: true, ByRuntimeBin: true, SWFOut: &out, Overlap: overlap}, p, jss.Engines{})
		return res, out.String(), err
	}
	for _, p := range gang.Policies() {
		want, wantSWF, err := run(sample.KTH(), p, false)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got, gotSWF, err := run(sample.KTH(), p, true)
		if err != nil {
			t.Fatalf("%s, overlapped: %v", p, err)
		}
		if !reflect.DeepEqual(got, want) || gotSWF != wantSWF {
			t.Errorf("%s: overlapped\n%+v\nwant\n%+v", p, got, want)
		}
	}
	// A malformed line after more jobs than one batch holds.
	var trace strings.Builder
	trace.WriteString("; MaxProcs: 10\n")
	for i := 1; i <= 700; i++ {
		trace.WriteString(strings.Repeat(" ", i%3) + strconv.Itoa(i) + " " + strconv.Itoa(i*10) + " -1 30 4 -1 -1 4 30 -1 1 1 1 -1 -1 -1 -1 -1\n")
	}
	trace.WriteString("701 7010 -1 30 x -1 -1 4 30 -1 1 1 1 -1 -1 -1 -1 -1\n")
	bad := jss.TraceInput{Name: "bad.swf", Open: func(_ context.Context, opts ...swf.Option) (*swf.Reader, io.Closer, error) {
		return swf.OpenReader(strings.NewReader(trace.String()), "bad.swf", opts...)
	}}
	_, _, want := run(bad, gang.EASY, false)
	_, _, got := run(bad, gang.EASY, true)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("malformed trace: overlapped %v, want %v", got, want)
	}
}
