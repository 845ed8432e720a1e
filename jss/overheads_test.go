package jss_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/sharing"
)

// The zero Overheads are the ideal model: the same results as a config
// without them (the existing timelines), and IsZero.
func TestOverheadsZeroIsIdeal(t *testing.T) {
	if !(jss.Overheads{}).IsZero() || (jss.Overheads{SoloSync: true}).IsZero() {
		t.Fatal("IsZero")
	}
}

// Delivery delay under BCS. As TestBCSOneSliceDelivery (two processes, a
// blocking exchange after 10 ms of compute, 50 ms slices), but the strobe's
// deliveries reach the processes 5 ms after it:
//
//	0-10 compute, send, block | strobe 50: delivered, ready at 55;
//	55-65 compute, send, block | strobe 100: delivered at 105 → ends at 105.
func TestBCSDeliveryDelay(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 2, 1)
	cfg.Slice = 50 * ms
	cfg.Overheads.Delivery = 5 * ms
	res, st := modelRun(t, cfg, []jss.Job{job(1, 0, 2, 20*ms, "10ms,0,transpose,B")})
	if res[1] != [2]time.Duration{0, 105 * ms} {
		t.Fatalf("job ran %v, want [0, 105ms]", res[1])
	}
	if st.Executed != st.Compute || st.Compute != 40*ms {
		t.Errorf("executed %v, compute %v, want both 40ms", st.Executed, st.Compute)
	}
}

// While a process waits for its delayed delivery, its node lends the
// processor to a ready process of another row, which the woken process
// then preempts (row order). MPL 2, slice 50 ms, delivery 20 ms, process
// switch 1 ms, SoloSync (so one-process jobs block at their barriers), on
// one node:
//
//	A (row 0): 10 ms compute, barrier; 2 iterations.
//	B (row 1): 100 ms compute, barrier; 1 iteration.
//
//	slice 0 (row 0), 0-50:  switch 1, A 1-11 arrives; switch 1, B 12-50 (38).
//	slice 1 (row 1), 50-100: A released at 50 but ready at 70; B (row 1)
//	  runs 50-100 (no switch): 88 of 100.
//	slice 2 (row 0), 100-150: B ran last; A is not blocked but ready since
//	  70: switch 1, A 101-111 arrives (2nd barrier); switch 1, B 112-124
//	  ends its compute (12), arrives → blocked.
//	strobe 150: both released, ready at 170 → A's 2nd iteration ends at
//	  170 (its barrier is its last receive), B ends at 170 too.
func TestBCSDeliveryDelayLendsTheProcessor(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 1, 2)
	cfg.Slice = 50 * ms
	cfg.ProcessSwitch = ms
	cfg.Overheads.Delivery = 20 * ms
	cfg.Overheads.SoloSync = true
	res, st := modelRun(t, cfg, []jss.Job{
		job(1, 0, 1, 20*ms, "10ms,0,barrier,NB"),
		job(2, 0, 1, 100*ms, "100ms,0,barrier,NB"),
	})
	if res[1][1] != 170*ms || res[2][1] != 170*ms {
		t.Fatalf("results %v, want both to end at 170ms", res)
	}
	// Switches: A, then B (a reuse) in slice 0; none in slice 1 (B ran
	// last); A, then B (a reuse) in slice 2.
	if st.Switches != 4 || st.Reuses != 2 {
		t.Errorf("switches %d reuses %d, want 4 and 2", st.Switches, st.Reuses)
	}
}

// SoloSync: a one-process barrier job waits for the strobe each
// iteration, as in the runtime; without it, it just computes.
func TestBCSSoloSync(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 1, 1)
	cfg.Slice = 50 * ms
	res, _ := modelRun(t, cfg, []jss.Job{job(1, 0, 1, 30*ms, "10ms,0,news,NB")})
	if res[1][1] != 30*ms {
		t.Fatalf("without SoloSync: ended at %v, want 30ms", res[1][1])
	}
	// 0-10 compute, barrier; strobe 50 releases; 50-60; strobe 100; 100-110;
	// strobe 150 releases the last → 150.
	cfg.Overheads.SoloSync = true
	res, _ = modelRun(t, cfg, []jss.Job{job(1, 0, 1, 30*ms, "10ms,0,news,NB")})
	if res[1][1] != 150*ms {
		t.Fatalf("with SoloSync: ended at %v, want 150ms", res[1][1])
	}
	// A blocking pattern on one process has no messages and no barrier:
	// unchanged.
	res, _ = modelRun(t, cfg, []jss.Job{job(1, 0, 1, 30*ms, "10ms,0,transpose,B")})
	if res[1][1] != 30*ms {
		t.Fatalf("B with SoloSync: ended at %v, want 30ms", res[1][1])
	}
}

// Launch and compute scale in every model. One job of 2 processes, 3
// iterations of 10 ms (barrier pattern, exact network: 30 ms dedicated),
// launch 4 ms, compute scale 1.5 (15 ms a phase):
//
//	BF: 4 + 3 × 15 = 49 ms (the reported runtime is the stretched
//	program's dedicated 45 ms, without the launch).
//	BGS (alone, slice 10 ms, job switch 1 ms): needs 4 + 45 = 49 ms of
//	running: 9 a slice after the first switch-in only (alternative
//	scheduling keeps it in) → 1 + 49 = 50 ms.
//	BCS (slice 50): 4 launch, 15 compute → barrier at 19; strobe 50;
//	50-65; strobe 100; 100-115; strobe 150 → 150 ms.
func TestOverheadsLaunchAndComputeScale(t *testing.T) {
	o := jss.Overheads{Launch: 4 * ms, ComputeScale: 1.5}
	for _, c := range []struct {
		mode  sharing.Mode
		slice time.Duration
		end   time.Duration
	}{{sharing.Space, 10 * ms, 49 * ms}, {sharing.Gang, 10 * ms, 50 * ms}, {sharing.BCS, 50 * ms, 150 * ms}} {
		cfg := smallMachine(c.mode, 2, 2)
		cfg.Slice = c.slice
		cfg.Overheads = o
		var got jss.Result
		_, err := jss.RunModel(t.Context(), cfg, jss.SliceSource([]jss.Job{job(1, 0, 2, 30*ms, "10ms,0,barrier,NB")}), func(r jss.Result) error {
			got = r
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.End != c.end {
			t.Errorf("%s: ended at %v, want %v", c.mode, got.End, c.end)
		}
		if got.Compute != 60*ms {
			t.Errorf("%s: useful compute %v, want the drawn 60ms", c.mode, got.Compute)
		}
	}
}

func TestOverheadsValidate(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 2, 1)
	cfg.Overheads = jss.Overheads{Launch: -1, Delivery: 10 * ms, ComputeScale: -2}
	err := cfg.Validate()
	for _, want := range []string{"launch -1ns", "compute scale -2", "delivery delay 10ms must be less than the slice 10ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}
