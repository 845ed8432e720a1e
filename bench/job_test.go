package bench

import (
	"strings"
	"testing"
	"time"
)

// A job survives its trip through EnvJob unchanged; a bad one is refused
// with every problem named.
func TestJobEncodeDecode(t *testing.T) {
	tp, err := ParseTemplate("50ms,25ms,news,NB")
	if err != nil {
		t.Fatal(err)
	}
	j := Job{Template: tp, Iterations: 12, Seed: 7, Work: "wall"}
	got, err := DecodeJob(j.Encode())
	if err != nil || got != j {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, j)
	}
	bad := Job{Template: Template{Grain: -time.Millisecond, Pattern: "ring", Sync: "B"}, Work: "gpu"}
	_, err = DecodeJob(bad.Encode())
	for _, want := range []string{"grain -1ms", `unknown pattern "ring"`, "iterations 0", `work "gpu"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad job: %v, want %q in it", err, want)
		}
	}
	if _, err := DecodeJob("--template 50ms,25ms,news,NB"); err == nil {
		t.Error("arguments decoded as a job")
	}
}

// A job's runtime estimate is its iterations times the estimate of one.
func TestJobRuntimeEstimate(t *testing.T) {
	tp, _ := ParseTemplate("10ms,0,transpose,B")
	net := DefaultNetwork()
	j := Job{Template: tp, Iterations: 300}
	if got, want := j.RuntimeEstimate(4, net), 300*IterationEstimate(tp, 4, net); got != want {
		t.Fatalf("estimate %v, want %v", got, want)
	}
	// 10ms compute and 3 messages of 40.96µs plus 10µs latency.
	if got, want := IterationEstimate(tp, 4, net), 10*time.Millisecond+3*40960*time.Nanosecond+10*time.Microsecond; got != want {
		t.Fatalf("iteration %v, want %v", got, want)
	}
}

// A job submitted with a target runtime gets the iterations that take it
// (given ones are kept), and its runtime estimate as its limit.
func TestJobDefaults(t *testing.T) {
	tp, _ := ParseTemplate("10ms,0,transpose,B")
	net := DefaultNetwork()
	j := Job{Template: tp}
	limit := j.Defaults(4, time.Minute)
	if want := Iterations(tp, 4, net, time.Minute); j.Iterations != want || limit != j.RuntimeEstimate(4, net) {
		t.Errorf("from a runtime: %d iterations, limit %v; want %d, %v", j.Iterations, limit, want, j.RuntimeEstimate(4, net))
	}
	j = Job{Template: tp, Iterations: 300}
	if limit := j.Defaults(4, 0); j.Iterations != 300 || limit != 300*IterationEstimate(tp, 4, net) {
		t.Errorf("given iterations: %d, limit %v", j.Iterations, limit)
	}
}
