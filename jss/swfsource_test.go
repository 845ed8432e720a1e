package jss_test

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/swf"
)

// swfLine builds a job line from the fields that matter here; the rest are -1.
func swfLine(num, submit, run, alloc, req, reqTime, reqMem float64) string {
	f := [18]float64{num, submit, -1, run, alloc, -1, -1, req, reqTime, reqMem, 1, 3, -1, -1, -1, -1, -1, -1}
	parts := make([]string, len(f))
	for i, v := range f {
		parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strings.Join(parts, " ")
}

func readAll(t *testing.T, src *jss.SWFSource) []jss.Job {
	t.Helper()
	var jobs []jss.Job
	for {
		j, err := src.Next()
		if err == io.EOF {
			return jobs
		}
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
}

func newSource(t *testing.T, text string, procs int, conv jss.Conventions, lenient bool) *jss.SWFSource {
	t.Helper()
	var opts []swf.Option
	if lenient {
		opts = append(opts, swf.WithLenient())
	}
	rd, err := swf.NewReader(strings.NewReader(text), "t.swf", opts...)
	if err != nil {
		t.Fatal(err)
	}
	src, err := jss.NewSWFSource(rd, jss.SWFSourceOptions{Name: "t.swf", Processors: procs, Conventions: conv, Lenient: lenient, KeepRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestSWFConventions(t *testing.T) {
	//            num submit run  alloc req reqTime reqMem
	trace := strings.Join([]string{
		swfLine(1, 0, 100, 4, 8, 200, 1024), // size 8 (requested), estimate 200
		swfLine(2, 5, 100, 4, -1, -1, -1),   // size 4 (allocated), estimate = runtime
		swfLine(3, 6, 300, 2, 2, 100, -1),   // overrun: 300 s past a 100 s estimate
		swfLine(4, 7, 50, -1, -1, 60, -1),   // no processors: dropped
		swfLine(5, 8, 50, 64, 64, 60, -1),   // wider than 16: dropped
		swfLine(6, 9, -1, 2, 2, 60, -1),     // no runtime: dropped
		swfLine(7, -1, 5, 2, 2, 60, -1),     // no submit time: dropped
		swfLine(8, 10, 5, 2.5, 2.5, 60, -1), // fractional size: rounded up
	}, "\n") + "\n"

	t.Run("defaults", func(t *testing.T) {
		src := newSource(t, trace, 16, jss.DefaultConventions(), false)
		jobs := readAll(t, src)
		if len(jobs) != 4 {
			t.Fatalf("delivered %d jobs, want 4", len(jobs))
		}
		check := func(j jss.Job, num int64, procs int, est, run time.Duration) {
			t.Helper()
			if j.Number != num || j.Processors != procs || j.Estimate != est || j.Runtime != run {
				t.Errorf("job %d: got #%d procs %d est %v run %v, want #%d procs %d est %v run %v",
					num, j.Number, j.Processors, j.Estimate, j.Runtime, num, procs, est, run)
			}
		}
		check(jobs[0], 1, 8, 200*time.Second, 100*time.Second)
		check(jobs[1], 2, 4, 100*time.Second, 100*time.Second)
		check(jobs[2], 3, 2, 300*time.Second, 300*time.Second) // extended
		check(jobs[3], 8, 3, 60*time.Second, 5*time.Second)
		if jobs[0].Memory != 1024*1024 || jobs[0].User != "3" {
			t.Errorf("job 1: memory %d user %q, want 1 MiB and user 3", jobs[0].Memory, jobs[0].User)
		}
		if jobs[0].Record == nil || jobs[0].Record.Line != 1 {
			t.Errorf("job 1: record not kept: %+v", jobs[0].Record)
		}
		c := src.Counts()
		want := jss.SourceCounts{Read: 8, Delivered: 4, Extended: 1,
			Dropped: jss.Dropped{NoProcessors: 1, TooWide: 1, NoRuntime: 1, NoSubmit: 1}}
		if c != want {
			t.Errorf("counts %+v, want %+v", c, want)
		}
	})

	t.Run("allocated, exact, kill", func(t *testing.T) {
		conv := jss.Conventions{Processors: jss.ProcsAllocated, Estimate: jss.EstimateExact, Overrun: jss.OverrunKill}
		jobs := readAll(t, newSource(t, trace, 16, conv, false))
		if jobs[0].Processors != 4 || jobs[0].Estimate != 100*time.Second {
			t.Errorf("job 1: procs %d est %v, want 4 (field 5) and 100s (exact)", jobs[0].Processors, jobs[0].Estimate)
		}
		// With exact estimates nothing overruns.
		if jobs[2].Truncated || jobs[2].Runtime != 300*time.Second {
			t.Errorf("job 3 with exact estimates: %+v", jobs[2])
		}
		conv.Estimate = jss.EstimateRequested
		src := newSource(t, trace, 16, conv, false)
		jobs = readAll(t, src)
		if !jobs[2].Truncated || jobs[2].Runtime != 100*time.Second || jobs[2].Estimate != 100*time.Second {
			t.Errorf("job 3 killed at its estimate: %+v", jobs[2])
		}
		if c := src.Counts(); c.Truncated != 1 || c.Extended != 0 {
			t.Errorf("counts %+v, want 1 truncated", c)
		}
	})
}

func TestSWFSourceUnsorted(t *testing.T) {
	trace := swfLine(1, 10, 5, 1, 1, 5, -1) + "\n" + swfLine(2, 5, 5, 1, 1, 5, -1) + "\n" + swfLine(3, 12, 5, 1, 1, 5, -1) + "\n"
	src := newSource(t, trace, 4, jss.DefaultConventions(), false)
	if _, err := src.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := src.Next()
	var pe *swf.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Field != 2 || !errors.Is(err, jss.ErrUnsorted) {
		t.Fatalf("err = %v, want a ParseError at t.swf:2 field 2 wrapping ErrUnsorted", err)
	}
	if !strings.Contains(err.Error(), "t.swf:2: field 2 (submit time)") {
		t.Errorf("message %q does not name the place", err)
	}
	lenient := newSource(t, trace, 4, jss.DefaultConventions(), true)
	if jobs := readAll(t, lenient); len(jobs) != 2 || lenient.Counts().Dropped.Unsorted != 1 {
		t.Fatalf("lenient: %d jobs, counts %+v", len(jobs), lenient.Counts())
	}
}

func TestSWFSourceMalformedLenient(t *testing.T) {
	trace := swfLine(1, 0, 5, 1, 1, 5, -1) + "\n1 2 three\n" + swfLine(3, 12, 5, 1, 1, 5, -1) + "\n"
	src := newSource(t, trace, 4, jss.DefaultConventions(), true)
	if jobs := readAll(t, src); len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
	if d := src.Counts().Dropped; d.Malformed != 1 || d.Total() != 1 {
		t.Fatalf("dropped %+v, want one malformed", d)
	}
	strict := newSource(t, trace, 4, jss.DefaultConventions(), false)
	strict.Next()
	if _, err := strict.Next(); err == nil || !strings.Contains(err.Error(), "t.swf:2:") {
		t.Fatalf("strict: err = %v, want one naming t.swf:2", err)
	}
}

func TestMachineSize(t *testing.T) {
	for _, c := range []struct {
		flag        int
		hdr         swf.Header
		want        int
		from        string
		errContains string
	}{
		{flag: 64, hdr: swf.Header{MaxProcs: 100}, want: 64, from: "--procs"},
		{hdr: swf.Header{MaxProcs: 100, MaxNodes: 50}, want: 100, from: "MaxProcs"},
		{hdr: swf.Header{MaxNodes: 50}, want: 50, from: "MaxNodes"},
		{errContains: "pass --procs"},
	} {
		got, from, err := jss.MachineSize(c.flag, &c.hdr)
		if c.errContains != "" {
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%+v: err = %v", c, err)
			}
			continue
		}
		if err != nil || got != c.want || from != c.from {
			t.Errorf("%+v: got %d from %q (%v)", c, got, from, err)
		}
	}
}

func TestConventionsValidate(t *testing.T) {
	err := jss.Conventions{Processors: "x", Estimate: "y", Overrun: "z"}.Validate()
	for _, s := range []string{`Processors "x": want requested or allocated`, `Estimate "y": want requested`, `Overrun "z": want extend or kill`} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("err = %v, want it to mention %s", err, s)
		}
	}
	if n := len(fielderr.All(err)); n != 3 {
		t.Errorf("%d errors keyed by field, want 3: %v", n, err)
	}
	if err := jss.DefaultConventions().Validate(); err != nil {
		t.Error(err)
	}
}

func TestSWFSourceTemplates(t *testing.T) {
	trace := "; MaxProcs: 8\n; Template: 1 50ms,25ms,news,NB\n; Template: 2 100ms,50ms,transpose,B\n" +
		"1 0 -1 10 4 -1 -1 4 10 -1 1 -1 -1 2 -1 -1 -1 -1\n" +
		"2 1 -1 10 4 -1 -1 4 10 -1 1 -1 -1 1 -1 -1 -1 -1\n" +
		"3 2 -1 10 4 -1 -1 4 10 -1 1 -1 -1 -1 -1 -1 -1 -1\n" +
		"4 3 -1 10 4 -1 -1 4 10 -1 1 -1 -1 7 -1 -1 -1 -1\n"
	src := newSource(t, trace, 8, jss.DefaultConventions(), false)
	for i, want := range []string{"100ms,50ms,transpose,B", "50ms,25ms,news,NB", ""} {
		j, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if j.Template != want {
			t.Errorf("job %d: template %q, want %q", i+1, j.Template, want)
		}
	}
	if _, err := src.Next(); err == nil || !strings.Contains(err.Error(), "t.swf:7: field 14 (executable)") || !strings.Contains(err.Error(), `no "; Template: 7`) {
		t.Fatalf("unknown template index: %v", err)
	}
	rd, err := swf.NewReader(strings.NewReader("; Template: x 50ms\n"), "bad.swf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jss.NewSWFSource(rd, jss.SWFSourceOptions{Name: "bad.swf", Processors: 4, Conventions: jss.DefaultConventions()}); err == nil || !strings.Contains(err.Error(), "bad.swf") {
		t.Fatalf("bad Template line: %v", err)
	}
}

// TestSWFSourceUserNames checks that a job's user is its SWF field 12
// written as the field was read, however often the user comes back and
// whatever the ID: small integers (named once and reused), large, fractional,
// negative zero, and unknown (-1, no user).
func TestSWFSourceUserNames(t *testing.T) {
	ids := []string{"3", "17", "3", "0", "-0", "0", "16384", "99999999", "2.5", "-1", "17", "-0"}
	want := []string{"3", "17", "3", "0", "-0", "0", "16384", "99999999", "2.5", "", "17", "-0"}
	var lines []string
	for i, id := range ids {
		lines = append(lines, strconv.Itoa(i+1)+" "+strconv.Itoa(i)+" -1 10 1 -1 -1 1 20 -1 1 "+id+" -1 -1 -1 -1 -1 -1")
	}
	jobs := readAll(t, newSource(t, strings.Join(lines, "\n")+"\n", 4, jss.DefaultConventions(), false))
	if len(jobs) != len(want) {
		t.Fatalf("delivered %d jobs, want %d", len(jobs), len(want))
	}
	for i, j := range jobs {
		if j.User != want[i] {
			t.Errorf("job %d (user field %q): user %q, want %q", i+1, ids[i], j.User, want[i])
		}
	}
}
