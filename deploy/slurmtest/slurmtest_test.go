package slurmtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// A two-node cluster runs a step on both nodes, each task with 3 CPUs (more
// than a 2-core host has: the nodes offer what they are configured with);
// Stop, with a job still
// running, leaves no process of the cluster and no directory.
func TestStartRunStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Slurm")
	}
	if err := Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Nodes: 2, CPUs: 3})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	out, err := c.Run(ctx, "srun", "-N", "2", "-n", "2", "-c", "3", "bash", "-c", `echo "$SLURMD_NODENAME $SLURM_CPUS_ON_NODE"`)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(out, "n1 3") || !strings.Contains(out, "n2 3") {
		t.Errorf("srun on both nodes: %q", out)
	}

	sbatch := c.Command(ctx, "sbatch", "--parsable", "-N", "1", "--wrap", "sleep 300")
	sbatch.Dir = t.TempDir() // its slurm-ID.out
	b, err := sbatch.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, b)
	}
	id := strings.TrimSpace(string(b))
	for len(c.JobProcesses(id)) < 2 { // slurmstepd and the script's shell
		select {
		case <-ctx.Done():
			state, reason, _ := c.JobState(ctx, id)
			t.Fatalf("job %s never ran (%s, %s)\n%s", id, state, reason, c.Logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if state, _, err := c.JobState(ctx, id); err != nil || state != "RUNNING" {
		t.Errorf("job %s: %s %v", id, state, err)
	}
	c.Stop()
	stopped = true
	if left := c.marked(); len(left) > 0 {
		t.Errorf("processes left after Stop: %v", left)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("%s left after Stop (%v)", c.Dir, err)
	}
}
