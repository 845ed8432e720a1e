package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// openMemory is the baseline: the same raft, transport and FSM path with
// raft's in-memory log, stable and snapshot stores (nothing reaches a disk).
func openMemory(b *testing.B, cfg Config) *Journal {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		b.Fatal(err)
	}
	mem := raft.NewInmemStore()
	j, err := open(context.Background(), c, stores{
		logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore(),
		close: func() error { return nil }, size: func() int64 { return 0 },
	})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// BenchmarkAppend: durable appends per second from concurrent submitters
// (one small entry each, as a job submission is), against the in-memory
// baseline in the same run. Compare the appends/s metrics.
func BenchmarkAppend(b *testing.B) {
	entry := make([]byte, 200)
	for _, submitters := range []int{1, 16} {
		for _, durable := range []bool{true, false} {
			name := fmt.Sprintf("memory/submitters=%d", submitters)
			if durable {
				name = fmt.Sprintf("durable/submitters=%d", submitters)
			}
			b.Run(name, func(b *testing.B) {
				cfg := loneConfig(b.TempDir(), &discardFSM{})
				cfg.Timing = DefaultLANTiming()
				var j *Journal
				if durable {
					var err error
					if j, err = Open(context.Background(), cfg); err != nil {
						b.Fatal(err)
					}
				} else {
					j = openMemory(b, cfg)
					eventually(b, 5*time.Second, "in-memory journal did not lead", j.IsLeader)
				}
				defer j.Close()
				b.SetParallelism((submitters + 1) / 2) // × GOMAXPROCS goroutines
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := j.Append(context.Background(), [][]byte{entry}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			})
		}
	}
}

// BenchmarkFailover: with the default LAN timing, the time from the
// leader's abrupt death to a new leader elected among three servers on
// loopback. The 2 s goal is beside it as a metric.
func BenchmarkFailover(b *testing.B) {
	g := newGroup(b, 3, DefaultLANTiming())
	lead := g.leader(10 * time.Second)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := g.js[lead].Append(context.Background(), [][]byte{[]byte("x")}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		g.kill(lead)
		next := -1
		for next < 0 {
			for i, j := range g.js {
				if j != nil && j.IsLeader() {
					next = i
				}
			}
			time.Sleep(time.Millisecond)
		}
		total += time.Since(start)
		b.StopTimer()
		g.start(lead, nil, DefaultLANTiming())
		lead = g.leader(10 * time.Second)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
	b.ReportMetric(2000, "goal-ms")
}

// BenchmarkRestart: Open of a lone journal holding 3,000 entries (a
// snapshot of 2,000 and 1,000 in the log) until it leads with everything
// applied, against Open of an empty journal (the election alone) in the
// same run.
func BenchmarkRestart(b *testing.B) {
	for _, entries := range []int{0, 3000} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "j")
			cfg := loneConfig(dir, &listFSM{})
			cfg.Timing = DefaultLANTiming()
			cfg.TrailingLogs = 1000
			j, err := Open(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			entry := make([]byte, 200)
			batch := make([][]byte, 0, 100)
			for i := range entries {
				batch = append(batch, entry)
				if len(batch) == cap(batch) {
					if err := j.Append(context.Background(), batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
				if i == 2000 {
					if err := j.Snapshot(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
			}
			j.Close()
			b.ResetTimer()
			for range b.N {
				f := &listFSM{}
				cfg.FSM = f
				j, err := Open(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if n := len(f.list()); n != entries {
					b.Fatalf("restored %d entries, want %d", n, entries)
				}
				j.Close()
				b.StartTimer()
			}
		})
	}
}

// discardFSM applies by counting.
type discardFSM struct{ n int }

func (f *discardFSM) Apply(uint64, [][]byte) error { f.n++; return nil }
func (f *discardFSM) Snapshot() ([]byte, error)    { return []byte(fmt.Sprint(f.n)), nil }
func (f *discardFSM) Restore([]byte) error         { return nil }
