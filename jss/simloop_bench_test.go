package jss

import (
	"context"
	"io"
	"testing"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss/metrics"
)

// BenchmarkSimLoop times the simulation goroutine of `cosched sim --trace
// KTH --policy easy` alone: KTH's jobs are read beforehand, then each run
// is the event loop, the core and the decision check, each result given to
// the metrics collector as SimulateTrace does, and no summary. With the
// trace read on another goroutine this is the run's critical path, which
// BenchmarkSimCommand's CPU time mixes with the parse's.
func BenchmarkSimLoop(b *testing.B) {
	path := sharedtest.Path(b, "traces", "KTH-SP2-1996-2.swf")
	ctx := context.Background()
	rd, closer, err := FileInput(path).Open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	procs, _, err := MachineSize(0, rd.Header())
	if err != nil {
		b.Fatal(err)
	}
	src, err := NewSWFSource(rd, SWFSourceOptions{Name: path, Processors: procs, Conventions: DefaultConventions()})
	if err != nil {
		b.Fatal(err)
	}
	var jobs []Job
	for {
		j, err := src.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	closer.Close()
	cfg := Config{Scheduler: gang.Config{Machine: gang.Machine{Processors: procs}, MPL: 1, Policy: gang.EASY}, Check: true}
	b.ReportAllocs()
	defer ReportCPU(b)()
	for b.Loop() {
		col := metrics.NewCollector(procs, metrics.DefaultTau)
		col.Grow(len(jobs))
		if _, err := simLoopRun(ctx, cfg, SliceSource(jobs), col); err != nil {
			b.Fatal(err)
		}
	}
}
