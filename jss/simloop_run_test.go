package jss

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/jss/metrics"
)

// simLoopRun runs as SimulateTrace does: results lent to the collector.
func simLoopRun(ctx context.Context, cfg Config, src Source, col *metrics.Collector) (Stats, error) {
	return runRef(ctx, cfg, src, func(r *Result) error {
		col.Add(r.MetricsJob())
		return nil
	})
}

// ReportCPU starts counting the process's CPU time (user and system, every
// thread: the garbage collector's too); the function it returns reports it
// per operation. On a shared host CPU time is steadier than ns/op. (Here,
// in package jss's tests, for this package's benchmarks and jss_test's.)
func ReportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/1e6/float64(b.N), "cpu-ms/op") }
}
