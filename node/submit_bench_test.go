package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// BenchmarkSubmit: submissions per second through the HTTP API from
// concurrent clients, each answered 201 only once the job is durable in the
// controller's journal (on disk, fsync'd: the default), against the same
// controller with its journal in memory, in the same run. Compare the
// submits/s metrics. The jobs queue behind one that holds the only
// processor, so the figure is the API, the controller's loop and the
// journal, not rank start-up.
func BenchmarkSubmit(b *testing.B) {
	for _, durable := range []bool{true, false} {
		name := "memory"
		if durable {
			name = "journal"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			cfg := node.Config{Name: "n0", Bind: "127.0.0.1:0", Local: true, Processors: 1, StateDir: filepath.Join(dir, "n0"),
				Shim: testShim(b), Controller: true, Mode: sharing.Space, MPL: 1, Policy: gang.FCFS,
				Log: zap.NewNop()}
			if !durable {
				cfg.Journal = &node.MemJournal{}
			}
			a, err := node.Start(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Shutdown()
			c := api.NewClient(a.APIAddr())
			deadline := time.Now().Add(20 * time.Second)
			for {
				rep, err := c.Nodes(context.Background(), false)
				if err == nil && len(rep.Nodes) == 1 && rep.Nodes[0].State == "up" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("agent not up: %+v, %v", rep, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			spec := api.JobSpec{Processors: 1, TimeLimit: api.Duration{D: time.Hour}, Command: []string{"sleep", "3600"}}
			b.SetParallelism(8) // 8 × GOMAXPROCS clients
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Submit(context.Background(), spec); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
		})
	}
}
