package closed

import (
	"context"
	"math"
	"reflect"
	"testing"
)

// Student-t 0.975 quantiles from a printed table (e.g. NIST/SEMATECH
// e-Handbook, 1.3.6.7.2).
func TestTQuantile(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 9: 2.262, 19: 2.093, 29: 2.045, 100: 1.984} {
		if got := TQuantile(0.975, df); math.Abs(got-want) > 5e-4 {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", df, got, want)
		}
	}
}

func TestEstimate95(t *testing.T) {
	// 1, 2, 3: mean 2, s = 1, t(0.975, 2) = 4.3027: half-width 4.3027/√3.
	e, err := Estimate95([]float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if e.Mean != 2 || math.Abs(e.HalfWidth-4.302653/math.Sqrt(3)) > 1e-5 {
		t.Errorf("got %+v, want mean 2, half-width 2.48414", e)
	}
	// 4, 4, 6, 6: mean 5, s² = 4/3, t(0.975, 3) = 3.1824: 3.1824·√(4/3)/2.
	e, _ = Estimate95([]float64{4, 4, 6, 6})
	if e.Mean != 5 || math.Abs(e.HalfWidth-3.182446*math.Sqrt(4.0/3)/2) > 1e-5 {
		t.Errorf("got %+v, want mean 5, half-width 1.83738", e)
	}
	if e, _ := Estimate95([]float64{7, 7}); e != (Estimate{Mean: 7}) {
		t.Errorf("constant: %+v", e)
	}
	if _, err := Estimate95([]float64{1}); err == nil {
		t.Error("one value: no error")
	}
}

func TestGainsOver(t *testing.T) {
	fcfs := Summary{Response: Estimate{Mean: 4}, Cycle: Estimate{Mean: 5}, Throughput: Estimate{Mean: 2}}
	p := Summary{Response: Estimate{Mean: 3}, Cycle: Estimate{Mean: 4}, Throughput: Estimate{Mean: 2.5}}
	if g := GainsOver(fcfs, p); g != (Gains{DRT: 0.25, DK: 0.2, DR: 0.25}) {
		t.Errorf("gains %+v, want 25%%, 20%%, 25%%", g)
	}
	if g := GainsOver(fcfs, fcfs); g != (Gains{}) {
		t.Errorf("fcfs over itself: %+v", g)
	}
}

func TestReplicationSeedsDiffer(t *testing.T) {
	seen := map[uint64]bool{}
	for base := range uint64(4) {
		for r := range 100 {
			s := ReplicationSeed(base, r)
			if seen[s] {
				t.Fatalf("seed (%d, %d) repeats", base, r)
			}
			seen[s] = true
		}
	}
}

// mva is exact mean value analysis of a closed network of two single-server
// FCFS exponential stations with demands d1, d2 and n customers: the
// throughput and the mean time at station 1.
func mva(n int, d1, d2 float64) (x, r1 float64) {
	var q1, q2 float64
	for k := 1; k <= n; k++ {
		r1 = d1 * (1 + q1)
		r2 := d2 * (1 + q2)
		x = float64(k) / (r1 + r2)
		q1, q2 = x*r1, x*r2
	}
	return x, r1
}

// within reports whether the exact value lies within 3 half-widths of the
// estimate (a 95 % interval misses 5 % of the time; 3 half-widths far less).
func within(t *testing.T, what string, e Estimate, exact float64) {
	t.Helper()
	if math.Abs(e.Mean-exact) > 3*e.HalfWidth || e.HalfWidth <= 0 {
		t.Errorf("%s: %.4f ± %.4f, exact %.4f", what, e.Mean, e.HalfWidth, exact)
	}
}

// With one processor every job has size 1 and every policy is FCFS: the
// network is two exponential FCFS stations, a product-form network whose
// exact means MVA gives.
func TestOneProcessorMatchesMVA(t *testing.T) {
	const n, m, k = 3, 1.0, 0.563
	e := Experiment{Procs: 1, Jobs: []int{n}, Policies: []Policy{FCFS, LJFS}, Service: Service{Dist: Exponential, Mean: m}, IOMean: k,
		Warmup: 500, Completions: 10000, Replications: 8, Seed: 3}
	rows, err := e.Run(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	x, r1 := mva(n, m, k)
	for _, r := range rows {
		within(t, string(r.Policy)+" response", r.Response, r1)
		within(t, string(r.Policy)+" cycle", r.Cycle, n/x)
		within(t, string(r.Policy)+" throughput", r.Throughput, x)
		within(t, string(r.Policy)+" cpu", r.CPUUtil, x*m)
		within(t, string(r.Policy)+" io", r.IOUtil, x*k)
	}
	if rows[1].Gains == nil || math.Abs(rows[1].Gains.DRT) > 1e-12 {
		t.Errorf("ljfs on one processor is fcfs: gains %+v", rows[1].Gains)
	}
}

// One job never waits at the processors, whatever the distribution: its
// response is a service time (mean m), its cycle m + k, and the processors
// are busy E[size]·m = (P+1)/2·m of every m + k.
func TestOneJobNeverWaits(t *testing.T) {
	const p, m, k = 4, 2.0, 1.0
	e := Experiment{Procs: p, Jobs: []int{1}, Policies: []Policy{AFCFS}, Service: Service{Dist: BranchingErlang, Mean: m, CV: 2}, IOMean: k,
		Warmup: 100, Completions: 5000, Replications: 6, Seed: 9}
	rows, err := e.Run(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	within(t, "response", r.Response, m)
	within(t, "cycle", r.Cycle, m+k)
	within(t, "throughput", r.Throughput, 1/(m+k))
	within(t, "cpu", r.CPUUtil, float64(p+1)/2*m/(p*(m+k)))
	within(t, "io", r.IOUtil, k/(m+k))
	if r.Gains != nil {
		t.Errorf("no fcfs, yet gains %+v", r.Gains)
	}
}

func TestExperimentIndependentOfParallel(t *testing.T) {
	e := Experiment{Procs: 8, Jobs: []int{2, 6}, Policies: []Policy{LJFS, FCFS}, Service: Service{Dist: Erlang2, Mean: 1}, IOMean: 0.563,
		Warmup: 50, Completions: 500, Replications: 3, Seed: 1}
	a, err := e.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Run(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("results depend on parallel")
	}
	order := []struct {
		p Policy
		n int
	}{{LJFS, 2}, {LJFS, 6}, {FCFS, 2}, {FCFS, 6}}
	for i, o := range order {
		if a[i].Policy != o.p || a[i].Jobs != o.n {
			t.Errorf("row %d is (%s, %d), want (%s, %d)", i, a[i].Policy, a[i].Jobs, o.p, o.n)
		}
	}
	if *a[2].Gains != (Gains{}) {
		t.Errorf("fcfs gains %+v, want 0", *a[2].Gains)
	}
	if e.Replications = 1; e.Validate() == nil {
		t.Error("1 replication: no error")
	}
}
