package jss_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/sharing"
)

const ms = time.Millisecond

// exactNet has no latency, so hand-worked times come out exact.
func exactNet() jss.Network {
	n := jss.DefaultNetwork()
	n.Latency = 0
	return n
}

func tmpl(t *testing.T, s string) bench.Template {
	t.Helper()
	tp, err := bench.ParseTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestDedicatedRuns(t *testing.T) {
	net := jss.DefaultNetwork() // 4 KB at 100 MB/s: 40.96 µs a message; 10 µs latency
	xfer := 40960 * time.Nanosecond
	lat := 10 * time.Microsecond
	for _, c := range []struct {
		tpl   string
		procs int
		iters int
		want  time.Duration
	}{
		// One process: compute only.
		{"10ms,0,transpose,B", 1, 3, 30 * ms},
		// Barrier of 8: 10 ms, then a 3-level tree.
		{"10ms,0,barrier,NB", 8, 2, 2 * (10*ms + 3*lat)},
		// Transpose B with 2 processes: one step, send then receive.
		{"10ms,0,transpose,B", 2, 2, 2 * (10*ms + xfer + lat)},
		// Transpose B with 4: three steps, each waiting one transfer + latency.
		{"10ms,0,transpose,B", 4, 1, 10*ms + 3*(xfer+lat)},
		// News NB on a 2×2 torus: 4 messages each, the last arriving after
		// 4 transfers + latency, then a 2-level barrier.
		{"10ms,0,news,NB", 4, 1, 10*ms + 4*xfer + lat + 2*lat},
	} {
		p := jss.NewProgram(tmpl(t, c.tpl), c.procs, c.iters, 1)
		d := p.RunDedicated(net)
		if d.Runtime != c.want {
			t.Errorf("%s on %d for %d iterations: runtime %v, want %v", c.tpl, c.procs, c.iters, d.Runtime, c.want)
		}
		if want := time.Duration(c.procs*c.iters) * 10 * ms; d.Compute != want {
			t.Errorf("%s: compute %v, want %v", c.tpl, d.Compute, want)
		}
	}
	// With imbalance, draws are reproducible, within (g−v/2, g+v/2), and
	// differ between processes and iterations.
	p := jss.NewProgram(tmpl(t, "100ms,50ms,news,NB"), 16, 50, 42)
	seen := map[time.Duration]bool{}
	for q := 0; q < 16; q++ {
		for i := 0; i < 50; i++ {
			c := p.Compute(q, i)
			if c < 75*ms || c >= 125*ms || c != p.Compute(q, i) {
				t.Fatalf("compute(%d,%d) = %v", q, i, c)
			}
			seen[c] = true
		}
	}
	if len(seen) < 790 {
		t.Errorf("only %d distinct draws of 800", len(seen))
	}
	if a, b := p.RunDedicated(net), jss.NewProgram(tmpl(t, "100ms,50ms,news,NB"), 16, 50, 42).RunDedicated(net); a != b {
		t.Errorf("dedicated runs differ: %+v vs %+v", a, b)
	}
}

// modelRun runs templated jobs under a mode and returns each job's
// [start, end) by number, and the stats.
func modelRun(t *testing.T, cfg jss.ModelConfig, jobs []jss.Job) (map[int64][2]time.Duration, jss.ModelStats) {
	t.Helper()
	cfg.Check = true
	got := map[int64][2]time.Duration{}
	st, err := jss.RunModel(context.Background(), cfg, jss.SliceSource(jobs), func(r jss.Result) error {
		got[r.Number] = [2]time.Duration{r.Start, r.End}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(jobs) {
		t.Fatalf("%d results for %d jobs", len(got), len(jobs))
	}
	return got, st
}

func job(n int64, submit time.Duration, procs int, runtime time.Duration, tpl string) jss.Job {
	return jss.Job{Job: gang.Job{Submit: submit, Processors: procs, Estimate: runtime, Template: tpl}, Number: n, Runtime: runtime}
}

func smallMachine(mode sharing.Mode, procs, mpl int) jss.ModelConfig {
	cfg := jss.DefaultModelConfig(mode)
	cfg.Scheduler.Machine = gang.Machine{Processors: procs}
	cfg.Scheduler.MPL = mpl
	cfg.Scheduler.Policy = gang.FCFS
	cfg.Slice = 10 * ms
	cfg.JobSwitch = ms
	cfg.ProcessSwitch = 0
	cfg.Network = exactNet()
	return cfg
}

// Two 20 ms jobs that each fill a row of MPL 2 alternate slice by slice,
// each slice starting with a 1 ms job switch: 9 ms of progress a slice.
//
//	slice  0-10  A 9   | 10-20 B 9 | 20-30 A 18 | 30-40 B 18
//	40-50  A needs 2: ends at 40+1+2 = 43 | 50-60 B ends at 53
func TestBGSAlternatesRows(t *testing.T) {
	cfg := smallMachine(sharing.Gang, 4, 2)
	res, st := modelRun(t, cfg, []jss.Job{
		job(1, 0, 4, 20*ms, "10ms,0,barrier,NB"),
		job(2, 0, 4, 20*ms, "10ms,0,barrier,NB"),
	})
	if res[1] != [2]time.Duration{0, 43 * ms} || res[2] != [2]time.Duration{0, 53 * ms} {
		t.Fatalf("results %v, want job 1 [0,43ms] and job 2 [0,53ms]", res)
	}
	if st.Switches != 6 {
		t.Errorf("%d job switches, want 6", st.Switches)
	}
	// Both rows full for 6 slices of 10 ms.
	if st.SlotTime < 0.0599 || st.SlotTime > 0.0601 {
		t.Errorf("slot time %v s, want 0.06", st.SlotTime)
	}
}

// Alone in a matrix of MPL 2, a job also runs in the empty row's slices
// (alternative scheduling): it runs every slice and switches in once.
func TestBGSAlternativeScheduling(t *testing.T) {
	cfg := smallMachine(sharing.Gang, 4, 2)
	res, st := modelRun(t, cfg, []jss.Job{job(1, 0, 2, 20*ms, "10ms,0,barrier,NB")})
	if res[1][1] != 21*ms {
		t.Fatalf("job ended at %v, want 21ms (1 ms switch, then 20 ms of work)", res[1][1])
	}
	if st.Switches != 1 {
		t.Errorf("%d switches, want 1", st.Switches)
	}
}

// Under BCS a message sent in slice k is received at the strobe that ends
// it. Two processes exchanging blocking messages each iteration (10 ms of
// compute) therefore finish one iteration per 50 ms slice:
//
//	0-10 compute, send, block | strobe 50: received; 50-60 compute, send,
//	block | strobe 100: received, 2nd iteration done → ends at 100 ms.
func TestBCSOneSliceDelivery(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 2, 1)
	cfg.Slice = 50 * ms
	res, st := modelRun(t, cfg, []jss.Job{job(1, 0, 2, 20*ms, "10ms,0,transpose,B")})
	if res[1] != [2]time.Duration{0, 100 * ms} {
		t.Fatalf("job ran %v, want [0, 100ms]", res[1])
	}
	if st.Executed != st.Compute || st.Compute != 40*ms {
		t.Errorf("executed %v, compute %v, want both 40ms", st.Executed, st.Compute)
	}
}

// Process-level slot reuse: in row 0's slice, job A (row 0) computes 10 ms
// and blocks; each node then runs job B's process (row 1) for 10 ms, which
// blocks too. At the next strobe both receive; in row 1's slice B then A
// compute. Both finish their 2 iterations at the strobe at 100 ms. Every
// switch to the other row's process counts as a reuse. Per node: A (switch),
// B (switch, reuse); next slice B is already running (no switch), then A
// (switch, reuse): 3 switches and 2 reuses a node.
func TestBCSSlotReuse(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 2, 2)
	cfg.Slice = 50 * ms
	res, st := modelRun(t, cfg, []jss.Job{
		job(1, 0, 2, 20*ms, "10ms,0,transpose,B"),
		job(2, 0, 2, 20*ms, "10ms,0,transpose,B"),
	})
	if res[1] != [2]time.Duration{0, 100 * ms} || res[2] != [2]time.Duration{0, 100 * ms} {
		t.Fatalf("results %v, want both [0, 100ms]", res)
	}
	if st.Reuses != 4 || st.Switches != 6 {
		t.Errorf("reuses %d switches %d, want 4 and 6", st.Reuses, st.Switches)
	}
	// Without a second job to lend the processor to, the same job alone
	// gets no reuse, and ends at the same time.
	_, alone := modelRun(t, cfg, []jss.Job{job(1, 0, 2, 20*ms, "10ms,0,transpose,B")})
	if alone.Reuses != 0 {
		t.Errorf("reuses alone: %d", alone.Reuses)
	}
}

// h_max limits what a node delivers per slice. At 409.6 kB/s, a 10 ms slice
// carries one 4 KB message per node. Four processes in a non-blocking
// transpose send 3 messages each: delivering them takes the strobes at 10,
// 20 and 30 ms, so the single iteration ends at 30 ms.
func TestBCSBandwidthLimit(t *testing.T) {
	cfg := smallMachine(sharing.BCS, 4, 1)
	cfg.Network.Bandwidth = 409600
	res, _ := modelRun(t, cfg, []jss.Job{job(1, 0, 4, 40*ms, "10ms,0,transpose,NB")})
	if res[1][1] != 30*ms {
		t.Fatalf("ended at %v, want 30ms", res[1][1])
	}
	// With the default bandwidth all 3 fit in one slice: the barrier and
	// the messages complete at the first strobe.
	cfg.Network = exactNet()
	res, _ = modelRun(t, cfg, []jss.Job{job(1, 0, 4, 10*ms, "10ms,0,transpose,NB")})
	if res[1][1] != 10*ms {
		t.Fatalf("ended at %v, want 10ms", res[1][1])
	}
}

// BF runs every job for exactly its dedicated runtime: execution-time
// slowdown 1.
func TestBFRunsDedicated(t *testing.T) {
	cfg := smallMachine(sharing.Space, 8, 3)
	var results []jss.Result
	_, err := jss.RunModel(context.Background(), cfg, jss.SliceSource([]jss.Job{
		job(1, 0, 8, 100*ms, "20ms,10ms,news,B"),
		job(2, 0, 4, 50*ms, "10ms,5ms,transpose,NB"),
	}), func(r jss.Result) error { results = append(results, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.End-r.Start != r.Runtime {
			t.Errorf("job %d: exec %v, dedicated %v", r.Number, r.End-r.Start, r.Runtime)
		}
	}
}

func TestModelConfigRejectsSlicesNoLongerThanASwitch(t *testing.T) {
	cfg := jss.DefaultModelConfig(sharing.Gang)
	cfg.Slice = cfg.JobSwitch
	_, err := jss.RunModel(context.Background(), cfg, jss.SliceSource(nil), func(jss.Result) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "must exceed the job context switch") {
		t.Fatalf("err = %v", err)
	}
	cfg = jss.DefaultModelConfig(sharing.BCS)
	cfg.Slice = 50 * time.Microsecond
	_, err = jss.RunModel(context.Background(), cfg, jss.SliceSource(nil), func(jss.Result) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "must exceed the process context switch") {
		t.Fatalf("err = %v", err)
	}
}

// Every message a pattern sends is delivered exactly once: BCS delivers
// iterations × processes × messages per iteration (news: 4 on a 3×3 torus,
// 2 on 1×2; transpose: n−1; barrier: none).
func TestBCSMessageCounts(t *testing.T) {
	for _, c := range []struct {
		tpl   string
		procs int
		per   int64
	}{
		{"5ms,2ms,news,B", 9, 4}, {"5ms,2ms,news,NB", 9, 4}, {"5ms,2ms,news,NB", 2, 2},
		{"5ms,2ms,transpose,B", 6, 5}, {"5ms,2ms,transpose,NB", 6, 5},
		{"5ms,2ms,barrier,NB", 6, 0}, {"5ms,2ms,transpose,B", 1, 0},
	} {
		cfg := smallMachine(sharing.BCS, 9, 2)
		jobs := []jss.Job{job(1, 0, c.procs, 100*ms, c.tpl), job(2, 3*ms, c.procs, 60*ms, c.tpl)}
		var iters int64
		for _, j := range jobs {
			tp := tmpl(t, j.Template)
			iters += int64(max(1, int((j.Runtime+jss.IterationEstimate(tp, c.procs, cfg.Network)/2)/jss.IterationEstimate(tp, c.procs, cfg.Network))))
		}
		_, st := modelRun(t, cfg, jobs)
		if want := iters * int64(c.procs) * c.per; st.Messages != want {
			t.Errorf("%s on %d: %d messages delivered, want %d (%d iterations)", c.tpl, c.procs, st.Messages, want, iters)
		}
	}
}
