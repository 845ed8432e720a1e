package sample

import (
	"context"
	"io"
	"testing"
)

func TestEmbeddedKTHSample(t *testing.T) {
	rd, c, err := KTH().Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := rd.Header(); h.MaxProcs != 100 || h.MaxJobs != 5000 || h.Computer != "IBM SP2" {
		t.Errorf("header %+v", h)
	}
	n, prev := 0, -1.0
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if rec.JobNumber != float64(n) || rec.SubmitTime < prev {
			t.Fatalf("line %d: job %v submitted at %v after %v", rec.Line, rec.JobNumber, rec.SubmitTime, prev)
		}
		prev = rec.SubmitTime
	}
	if n != 5000 {
		t.Fatalf("%d jobs, want 5000", n)
	}
}
