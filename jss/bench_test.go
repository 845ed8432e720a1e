package jss_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/report"
	"github.com/cosched/cosched/jss/swf"
)

// BenchmarkKTH times whole-trace runs on KTH-SP2 (28,489 jobs). The
// "read-only" case streams and parses the trace without simulating: the
// baseline the policies are reported against (ratio = policy / read-only).
func BenchmarkKTH(b *testing.B) {
	path := sharedtest.Path(b, "traces", "KTH-SP2-1996-2.swf")
	b.Run("read-only", func(b *testing.B) {
		defer jss.ReportCPU(b)()
		for b.Loop() {
			rd, c, err := swf.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := rd.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
		}
	})
	for _, p := range gang.Policies() {
		b.Run(string(p), func(b *testing.B) {
			defer jss.ReportCPU(b)()
			for b.Loop() {
				_, err := jss.SimulateTrace(context.Background(), jss.TraceOptions{
					Input: jss.FileInput(path), Conventions: jss.DefaultConventions(),
				}, p)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSimCommand is what `cosched sim --trace KTH --policy easy`
// does after its flags are parsed: the comparison with the decision check
// on, then the table. Its phases are benchmarked alone beside it (SWF
// reading in BenchmarkKTH/read-only, the unchecked run in BenchmarkKTH/easy)
// so that the cost of each is the difference.
func BenchmarkSimCommand(b *testing.B) {
	path := sharedtest.Path(b, "traces", "KTH-SP2-1996-2.swf")
	for _, check := range []bool{true, false} {
		b.Run(fmt.Sprintf("check=%t", check), func(b *testing.B) {
			b.ReportAllocs()
			defer jss.ReportCPU(b)()
			for b.Loop() {
				res, err := jss.Compare(context.Background(), jss.Comparison{
					Trace:    jss.TraceOptions{Input: jss.FileInput(path), Conventions: jss.DefaultConventions(), Tau: metrics.DefaultTau, Check: check},
					Policies: []gang.Policy{gang.EASY}, Parallel: 1,
				})
				if err != nil {
					b.Fatal(err)
				}
				if err := report.Write(io.Discard, "table", res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writeSyntheticTrace writes n jobs for a 128-processor machine: Poisson
// arrivals, log-uniform sizes (1–128) and runtimes (10 s – 10 h), estimates
// 1–5× the runtime. Offered load is about 0.8. Deterministic for a seed.
func writeSyntheticTrace(tb testing.TB, path string, n int, seed uint64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(seed, 1))
	w := swf.NewWriter(f)
	var h swf.Header
	if err := h.Set("MaxProcs", "128"); err != nil {
		tb.Fatal(err)
	}
	if err := h.Set("MaxJobs", strconv.Itoa(n)); err != nil {
		tb.Fatal(err)
	}
	if err := w.WriteHeader(&h); err != nil {
		tb.Fatal(err)
	}
	t := 0.0
	for i := 1; i <= n; i++ {
		t += math.Round(rng.ExpFloat64() * 1300)
		size := math.Round(math.Exp(rng.Float64() * math.Log(128)))
		run := math.Round(math.Exp(math.Log(10) + rng.Float64()*math.Log(3600)))
		est := math.Round(run * (1 + 4*rng.Float64()))
		rec := swf.Record{}
		rec.SetFields([swf.NumFields]float64{float64(i), t, -1, run, size, -1, -1, size, est, -1, 1, float64(1 + i%97), 1, -1, -1, -1, -1, -1})
		if err := w.Write(&rec); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// TestMillionJobHelper is the subprocess of BenchmarkMillionJobs: it runs
// only when JSS_HELPER_TRACE is set.
func TestMillionJobHelper(t *testing.T) {
	path := os.Getenv("JSS_HELPER_TRACE")
	if path == "" {
		t.Skip("helper process for BenchmarkMillionJobs")
	}
	if os.Getenv("JSS_HELPER_MODE") == "read-only" {
		rd, c, err := swf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for {
			if _, err := rd.Next(); err == io.EOF {
				return
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := jss.SimulateTrace(context.Background(), jss.TraceOptions{Input: jss.FileInput(path), Conventions: jss.DefaultConventions(), Check: true}, gang.EASY)
	if err != nil {
		t.Fatal(err)
	}
	if res.Metrics.Jobs != 1_000_000 {
		t.Fatalf("simulated %d jobs", res.Metrics.Jobs)
	}
	fmt.Printf("utilization %.3f mean wait %.0f s\n", res.Metrics.Utilization, res.Metrics.Wait.Mean)
}

// BenchmarkMillionJobs streams a generated 1,000,000-job trace under EASY
// (with the invariant check on) in a fresh process and reports its wall time
// and peak resident memory, beside a read-only pass over the same file.
func BenchmarkMillionJobs(b *testing.B) {
	path := filepath.Join(b.TempDir(), "million.swf")
	writeSyntheticTrace(b, path, 1_000_000, 42)
	for _, mode := range []string{"read-only", "easy"} {
		b.Run(mode, func(b *testing.B) {
			var peak int64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestMillionJobHelper$", "-test.v")
				cmd.Env = append(os.Environ(), "JSS_HELPER_TRACE="+path, "JSS_HELPER_MODE="+mode)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				peak = max(peak, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
		})
	}
}
