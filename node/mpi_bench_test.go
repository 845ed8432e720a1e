package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/node"
)

// BenchmarkMPIGang measures what time sharing does to a real MPICH
// program: its runtime alone (dedicated) and the mean runtime of two
// copies sharing the same two processors at MPL 2, in gang, bcs and local
// (uncoordinated Linux time sharing) modes, for a compute-heavy kernel
// (20 ms compute steps, one Allreduce each) and a communication-heavy one
// (tens of µs per step, a ring exchange and an Allreduce each). Ideal
// under gang: 2×. The runtime is the program's own MPI_Wtime between two
// barriers. Run with -benchtime=1x: each iteration starts real agents.
//
//	go test -run=^$ -bench=MPIGang -benchtime=1x ./node/
func BenchmarkMPIGang(b *testing.B) {
	prog := mpiProgram(b, "work")
	const slice = 50 * time.Millisecond
	for _, kernel := range []struct{ name, steps string }{{"compute", "50"}, {"comm", "10000"}} {
		for _, mode := range []node.Mode{node.Gang, node.BCS, node.Local} {
			b.Run(kernel.name+"/"+string(mode), func(b *testing.B) {
				var dedicated, shared float64
				for range b.N {
					cl := upCluster(b, mode, slice)
					dedicated += cl.runMPI(b, prog, 1, kernel.name, kernel.steps)
					shared += cl.runMPI(b, prog, 2, kernel.name, kernel.steps)
					cl.down(b)
				}
				n := float64(b.N)
				b.ReportMetric(dedicated/n, "dedicated-s")
				b.ReportMetric(shared/n, "mpl2-s")
				b.ReportMetric(shared/dedicated, "mpl2/dedicated")
				b.ReportMetric(float64(slice.Milliseconds()), "slice-ms")
			})
		}
	}
}

// benchCluster is a cluster started with `cosched cluster up`: two agents
// with one processor each.
type benchCluster struct {
	dir    string
	client *node.Client
}

func upCluster(b *testing.B, mode node.Mode, slice time.Duration) *benchCluster {
	b.Helper()
	dir := b.TempDir()
	out, err := execCommand(coschedBin, "cluster", "up", "--state-dir", dir, "-n", "2", "--processors", "1",
		"--mode", string(mode), "--mpl", "2", "--slice", slice.String()).CombinedOutput()
	if err != nil {
		b.Fatalf("cluster up: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		b.Fatal(err)
	}
	var rec struct {
		API string `json:"api"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		b.Fatal(err)
	}
	return &benchCluster{dir: dir, client: node.NewClient(rec.API)}
}

func (c *benchCluster) down(b *testing.B) {
	if out, err := execCommand(coschedBin, "cluster", "down", "--state-dir", c.dir).CombinedOutput(); err != nil {
		b.Errorf("cluster down: %v\n%s", err, out)
	}
}

// runMPI runs copies of the program at once, each with two ranks, and
// returns their mean runtime in seconds.
func (c *benchCluster) runMPI(b *testing.B, prog string, copies int, args ...string) float64 {
	b.Helper()
	ctx := context.Background()
	var ids []int64
	for range copies {
		id, err := c.client.Submit(ctx, node.JobSpec{Command: append([]string{prog}, args...), Processors: 2,
			TimeLimit: node.Duration{D: 5 * time.Minute}, MPI: node.MPIPMI1})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	var sum float64
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			j, err := c.client.Job(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if j.State.Done() {
				if j.State != node.Completed {
					b.Fatalf("job %d ended %s: %s", id, j.State, j.Reason)
				}
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("job %d still %s", id, j.State)
			}
			time.Sleep(50 * time.Millisecond)
		}
		files, _ := filepath.Glob(filepath.Join(c.dir, "agents", "*", "jobs", strconv.FormatInt(id, 10), "rank-0.out"))
		if len(files) != 1 {
			b.Fatalf("job %d: rank 0's output: %v", id, files)
		}
		raw, _ := os.ReadFile(files[0])
		var secs float64
		if _, err := fmt.Sscanf(strings.TrimSpace(string(raw)), "elapsed %g", &secs); err != nil {
			b.Fatalf("job %d said %q", id, raw)
		}
		sum += secs
	}
	return sum / float64(copies)
}
