package metrics

import (
	"io"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss/swf"
)

// kthCollector holds KTH-SP2's jobs (28,489) as the trace recorded them
// (its waits, not a simulation's): a summary's worth of real values.
func kthCollector(tb testing.TB) *Collector {
	rd, c, err := swf.Open(sharedtest.Path(tb, "traces", "KTH-SP2-1996-2.swf"))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	col := NewCollector(100, 0)
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return col
		} else if err != nil {
			tb.Fatal(err)
		}
		s := func(x float64) time.Duration { return time.Duration(max(x, 0)) * time.Second }
		submit, start := s(r.SubmitTime), s(r.SubmitTime)+s(r.WaitTime)
		col.Add(Job{Submit: submit, Start: start, End: start + s(r.RunTime), Processors: int(max(r.AllocatedProcessors, 1)), Runtime: s(r.RunTime)})
	}
}

// BenchmarkSummary times a KTH-sized summary, serially and in two halves
// at once, as computed now and as before (every metric sorted whole:
// sortedSummary), and each half alone.
func BenchmarkSummary(b *testing.B) {
	c := kthCollector(b)
	for _, way := range []struct {
		name string
		sum  func(run func(a, b func())) Summary
	}{{"sorted", func(run func(a, b func())) Summary { return sortedSummary(c, run) }}, {"now", c.summary}} {
		b.Run(way.name+"/serial", func(b *testing.B) {
			for b.Loop() {
				way.sum(nil)
			}
		})
		b.Run(way.name+"/halves", func(b *testing.B) {
			for b.Loop() {
				way.sum(atOnce)
			}
		})
		for _, half := range []string{"a", "b"} {
			b.Run(way.name+"/half-"+half, func(b *testing.B) {
				for b.Loop() {
					way.sum(func(x, y func()) {
						if half == "a" {
							x()
						} else {
							y()
						}
					})
				}
			})
		}
	}
}

// BenchmarkSummaryParts times each part of a KTH-sized summary alone, its
// scratch reused (no fresh memory).
func BenchmarkSummaryParts(b *testing.B) {
	c := kthCollector(b)
	for m, name := range []string{"wait", "response", "execution", "execslowdown"} {
		b.Run(name, func(b *testing.B) {
			var sc scratch
			for b.Loop() {
				c.summaryStat(&sc, metric(m))
			}
		})
	}
	b.Run("slowdowns", func(b *testing.B) {
		var sc scratch
		for b.Loop() {
			c.slowdownStats(&sc)
		}
	})
}
