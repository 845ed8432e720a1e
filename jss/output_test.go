package jss_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/swf"
)

func TestOrderedReleasesInArrivalOrder(t *testing.T) {
	var got []int64
	emit := jss.Ordered(func(r jss.Result) error {
		got = append(got, r.Seq)
		return nil
	})
	for _, seq := range []int64{2, 0, 3, 1, 5, 4} {
		if err := emit(jss.Result{Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	want := []int64{0, 1, 2, 3, 4, 5}
	if len(got) != len(want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("released %v, want %v", got, want)
		}
	}
}

// A small trace whose EASY schedule is worked out by hand (8 processors):
//
//	job 1: submit 0, 8 procs, runs 100 (estimate 100)  → [0, 100)
//	job 2: submit 10, 4 procs, runs 50 (estimate 60)   → head: [100, 150)
//	job 3: submit 20, 4 procs, runs 30 (estimate 30)   → [100, 130): fits beside job 2
//	job 4: submit 30, 2 procs, runs 10 (estimate 10)   → [130, 140): after job 3
const outputTrace = `; MaxProcs: 8
; Computer: test machine
1 0 -1 100 8 -1 -1 8 100 -1 1 1 1 -1 -1 -1 -1 -1
2 10 -1 50 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1
3 20 -1 30 4 -1 -1 4 30 -1 1 1 1 -1 -1 -1 -1 -1
4 30 -1 10 2 -1 -1 2 10 -1 1 2 1 -1 -1 -1 -1 -1
`

func memInput(name, text string) jss.TraceInput {
	return jss.TraceInput{Name: name, Open: func(_ context.Context, opts ...swf.Option) (*swf.Reader, io.Closer, error) {
		return swf.OpenReader(strings.NewReader(text), name, opts...)
	}}
}

func TestSimulateTraceWritesScheduleFiles(t *testing.T) {
	var swfOut, csvOut bytes.Buffer
	res, err := jss.SimulateTrace(context.Background(), jss.TraceOptions{
		Input: memInput("small.swf", outputTrace), Conventions: jss.DefaultConventions(),
		Check: true, SWFOut: &swfOut, JobsCSV: &csvOut,
	}, gang.EASY)
	if err != nil {
		t.Fatal(err)
	}
	// With --procs overriding the header, the written header says so.
	var over bytes.Buffer
	if _, err := jss.SimulateTrace(context.Background(), jss.TraceOptions{
		Input: memInput("small.swf", outputTrace), Processors: 12, Conventions: jss.DefaultConventions(), SWFOut: &over,
	}, gang.EASY); err != nil {
		t.Fatal(err)
	}
	overRd, err := swf.NewReader(&over, "over.swf")
	if err != nil {
		t.Fatal(err)
	}
	if got := overRd.Header().MaxProcs; got != 12 {
		t.Fatalf("MaxProcs after --procs 12 = %d, want 12", got)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Processors != 8 || res.ProcessorsFrom != "MaxProcs" || res.Metrics.Jobs != 4 {
		t.Fatalf("result %+v", res)
	}
	want := map[float64][2]float64{1: {0, 100}, 2: {100, 150}, 3: {100, 130}, 4: {130, 140}} // start, end

	// The SWF output reads back as SWF, in submit order, with the
	// simulated wait in field 3 and the original header kept.
	rd, err := swf.NewReader(&swfOut, "out.swf")
	if err != nil {
		t.Fatal(err)
	}
	if rd.Header().MaxProcs != 8 || rd.Header().Computer != "test machine" {
		t.Errorf("header not kept: %+v", rd.Header())
	}
	if note, _ := rd.Header().Get("Note"); !strings.Contains(note, "policy easy on 8 processors") {
		t.Errorf("note %q", note)
	}
	prevSubmit := -1.0
	n := 0
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		w := want[rec.JobNumber]
		if rec.SubmitTime < prevSubmit {
			t.Errorf("job %v out of submit order", rec.JobNumber)
		}
		prevSubmit = rec.SubmitTime
		if rec.WaitTime != w[0]-rec.SubmitTime || rec.RunTime != w[1]-w[0] {
			t.Errorf("job %v: wait %v run %v, want %v and %v", rec.JobNumber, rec.WaitTime, rec.RunTime, w[0]-rec.SubmitTime, w[1]-w[0])
		}
	}
	if n != 4 {
		t.Errorf("%d SWF lines, want 4", n)
	}

	rows, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "id,submit,start,end,processors,runtime,estimate" {
		t.Errorf("CSV header %v", rows[0])
	}
	for _, r := range rows[1:] {
		id, _ := strconv.ParseFloat(r[0], 64)
		start, _ := strconv.ParseFloat(r[2], 64)
		end, _ := strconv.ParseFloat(r[3], 64)
		if w := want[id]; start != w[0] || end != w[1] {
			t.Errorf("CSV job %v: [%v,%v], want %v", id, start, end, w)
		}
	}
	if len(rows) != 5 {
		t.Errorf("%d CSV rows, want header + 4", len(rows))
	}

	// Metrics of this schedule, by hand: waits 0, 90, 80, 100; the last job
	// ends at 150 (job 2).
	if got := res.Metrics.Wait.Mean; got != 67.5 {
		t.Errorf("mean wait %v, want 67.5", got)
	}
	if got := res.Metrics.Makespan; got != 150 {
		t.Errorf("makespan %v, want 150", got)
	}
}

func TestSWFWriterKillMarksFailed(t *testing.T) {
	var out bytes.Buffer
	w, err := jss.NewSWFWriter(&out, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := jss.Result{Job: jss.Job{Job: gang.Job{Submit: 5 * time.Second, Processors: 2, Estimate: 10 * time.Second}, Number: 7, Truncated: true},
		Start: 6 * time.Second, End: 16 * time.Second}
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rd, err := swf.NewReader(&out, "x")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if rec.JobNumber != 7 || rec.SubmitTime != 5 || rec.WaitTime != 1 || rec.RunTime != 10 || rec.AllocatedProcessors != 2 || rec.RequestedTime != 10 || rec.Status != 0 {
		t.Errorf("record %+v", rec)
	}
}
