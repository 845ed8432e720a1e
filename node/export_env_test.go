package node_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/sharing"
)

// A job's exported environment (submit --export) reaches its ranks on top
// of their base one, the agent's COSCHED_* variables win over it, and the
// queue listing does not carry it (only the job's details do).
func TestExportedEnvironment(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 1, mode: sharing.Space})
	env := []string{"I14_EXPORTED=yes, with spaces", "PATH=/i14/bin:/usr/bin:/bin", "COSCHED_RANK=99"}
	id := c.submit(api.JobSpec{Command: []string{"sleep", "1000"}, Processors: 1, Env: env})
	pid := c.waitExec(id, 1, "sleep")[0]
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	vars := strings.Split(string(b), "\x00")
	for _, want := range []string{env[0], env[1], "COSCHED_RANK=0"} {
		if !slices.Contains(vars, want) {
			t.Errorf("rank environment lacks %q: %q", want, vars)
		}
	}
	if slices.Contains(vars, env[2]) {
		t.Errorf("the exported COSCHED_RANK reached the rank: %q", vars)
	}
	ctx := context.Background()
	if j, err := c.client.Job(ctx, id); err != nil || !slices.Equal(j.Spec.Env, env) {
		t.Errorf("job details: env %q %v, want %q", j.Spec.Env, err, env)
	}
	jobs, err := c.client.Jobs(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.ID == id && j.Spec.Env != nil {
			t.Errorf("the listing carries the environment: %q", j.Spec.Env)
		}
	}
	if _, err := c.client.Submit(ctx, api.JobSpec{Command: []string{"true"}, Processors: 1, TimeLimit: api.Duration{D: 1e9},
		Env: []string{"NOEQUALS"}}); err == nil || !strings.Contains(err.Error(), "env: ") {
		t.Errorf("an environment entry without '=': %v", err)
	}
}
