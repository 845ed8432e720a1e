package localcluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/sharing"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
)

// Validate names every bad field, and accepts the defaults.
func TestValidate(t *testing.T) {
	o := DefaultOptions()
	o.StateDir = t.TempDir()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o.Agents, o.Slice, o.MPL, o.Mode, o.Bandwidth, o.Processors = 0, time.Nanosecond, 3, sharing.Space, -1, MaxProcessors+1
	var fields []string
	for _, e := range fielderr.All(o.Validate()) {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, ","); got != "Agents,Processors,Slice,MPL,Bandwidth" {
		t.Fatalf("bad fields %s", got)
	}
}

// An agent that fails to start is reported with its own error line, not
// a pointer to its log; nothing is left recorded.
func TestUpReportsTheAgentsError(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-cosched")
	script := "#!/bin/sh\necho '{\"level\":\"info\",\"msg\":\"starting\"}'\necho 'cosched: --cpus: 99: no such CPU' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Timeout = fake, filepath.Join(dir, "state"), 2, 10*time.Second
	// A previous cluster's failure in the same log is not this one's.
	os.MkdirAll(filepath.Join(o.StateDir, "agents", "a0"), 0o755)
	os.WriteFile(filepath.Join(o.StateDir, "agents", "a0", "agent.log"), []byte("cosched: an old failure\n"), 0o644)
	_, err := Up(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "agent a0 did not come up") || !strings.Contains(err.Error(), "--cpus: 99: no such CPU") ||
		strings.Contains(err.Error(), "old failure") {
		t.Fatalf("Up: %v", err)
	}
	if _, err := Load(o.StateDir); !os.IsNotExist(err) {
		t.Fatalf("a record was left: %v", err)
	}
}

// Up on a cluster that lost an agent starts that agent again, with the
// flags and state directory it had, and updates the record; Up on a whole
// cluster is refused.
func TestUpRestartsTheAgentsThatDied(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents")
	}
	exe := testExe(t)
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Mode, o.MPL, o.RealtimePriority = exe, t.TempDir(), 2, sharing.Space, 1, 0
	c, err := Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // the latest record: a restarted agent is in it, not in c
		if rec, err := Load(o.StateDir); err == nil {
			rec.Down(5 * time.Second)
			return
		}
		c.Down(5 * time.Second)
	}()
	if _, err := Up(context.Background(), o); !errors.Is(err, ErrRunning) {
		t.Fatalf("Up over a whole running cluster: %v", err)
	}
	oldPID := c.Agents[1].PID
	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for alive(oldPID) {
		time.Sleep(10 * time.Millisecond)
	}
	if dead := c.Dead(); len(dead) != 1 || dead[0] != "a1" {
		t.Fatalf("dead agents %v, want [a1]", dead)
	}
	c2, err := Up(context.Background(), o)
	if err != nil {
		for _, a := range c.Agents {
			log, _ := os.ReadFile(a.Log)
			lines := strings.Split(string(log), "\n")
			t.Logf("%s:\n%s", a.Name, strings.Join(lines[max(0, len(lines)-25):], "\n"))
		}
		t.Fatal(err)
	}
	if c2.Agents[1].PID == oldPID || !alive(c2.Agents[1].PID) || c2.Agents[0].PID != c.Agents[0].PID {
		t.Fatalf("after Up: agents %+v (a1 was pid %d)", c2.Agents, oldPID)
	}
	rec, err := Load(o.StateDir)
	if err != nil || rec.Agents[1].PID != c2.Agents[1].PID || !slices.Equal(rec.Agents[1].Args, c.Agents[1].Args) {
		t.Fatalf("record after the restart: %+v, %v", rec, err)
	}
}

// Three controllers: the leader is killed while a job runs and one waits;
// another leads, Up restarts the dead one (with its journal), and both jobs
// complete under their ids.
func TestUpWithStandbyControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents")
	}
	exe := testExe(t)
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Controllers, o.Mode, o.MPL, o.RealtimePriority = exe, t.TempDir(), 2, 3, sharing.Space, 1, 0
	c, err := Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Down(5 * time.Second) }()
	if len(c.Agents) != 5 || c.compute() != 2 {
		t.Fatalf("agents %+v", c.Agents)
	}
	var apis []string
	for _, a := range c.Agents {
		apis = append(apis, a.API)
	}
	key, err := clusterkey.Load(KeyFile(o.StateDir))
	if err != nil {
		t.Fatal(err)
	}
	client := api.NewKeyClient(key, apis[3], apis...) // a compute agent first
	leader := func() string {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if rep, err := client.Nodes(context.Background(), false); err == nil {
				for _, n := range rep.Nodes {
					if n.Leader {
						return n.Name
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no leader")
		return ""
	}
	first := leader()
	var ids []int64
	for _, secs := range []string{"3", "1"} {
		id, err := client.Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"sleep", secs}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, a := range c.Agents {
		if a.Name == first {
			syscall.Kill(a.PID, syscall.SIGKILL)
			for alive(a.PID) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	if next := leader(); next == first {
		t.Fatalf("%s still leads after it was killed", first)
	}
	if c, err = Up(context.Background(), o); err != nil {
		t.Fatalf("Up to restart %s: %v", first, err)
	}
	if dead := c.Dead(); len(dead) != 0 {
		t.Fatalf("dead after Up: %v", dead)
	}
	for _, id := range ids {
		deadline := time.Now().Add(30 * time.Second)
		for {
			j, err := client.Job(context.Background(), id)
			if err == nil && j.State == api.Completed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d: %+v, %v", id, j, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Job ids go on across clusters of one state directory: after cluster
// down, the next cluster's first job follows the last one's.
func TestJobIDsGoOnAcrossClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents")
	}
	exe := testExe(t)
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Mode, o.MPL, o.RealtimePriority = exe, t.TempDir(), 1, sharing.Space, 1, 0
	submit := func(c *Cluster) int64 {
		id, err := c.Client().Submit(context.Background(), api.JobSpec{Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	c, err := Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	first, second := submit(c), submit(c)
	if err := c.Down(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	o.Processors = 2 // another cluster: the old journal is set aside
	c, err = Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Down(5 * time.Second) }()
	if third := submit(c); first != 1 || second != 2 || third != 3 {
		t.Fatalf("ids %d, %d, then %d in the next cluster", first, second, third)
	}
	if _, err := os.Stat(filepath.Join(o.StateDir, "agents", "a0", "journal.prev")); err != nil {
		t.Fatalf("the first cluster's journal was not kept: %v", err)
	}
}

// A rolling restart of a cluster whose agents keep their ranks: every
// agent is killed and started again in turn, the controller's last, while
// two gang jobs run, a long one and a short one that ends during the
// restart (its ranks' ends must reach the controller through the agents'
// next lives, not be taken for lost ranks); both complete, each rank's
// output showing one run. A cluster without --keep-ranks is refused
// before any agent is touched.
func TestRollingRestartKeepsJobsRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents")
	}
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Mode, o.MPL, o.RealtimePriority, o.KeepRanks = testExe(t), t.TempDir(), 2, sharing.Gang, 2, 0, true
	c, err := Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if rec, err := Load(o.StateDir); err == nil {
			rec.Down(5 * time.Second)
			return
		}
		c.Down(5 * time.Second)
	}()
	counts := map[int64]int{}
	out := func(id int64, agent string, r int) string {
		return filepath.Join(o.StateDir, "agents", agent, "jobs", strconv.FormatInt(id, 10), fmt.Sprintf("rank-%d.out", r))
	}
	for _, n := range []int{30, 4} {
		cmd := []string{"sh", "-c", fmt.Sprintf(`echo start; i=0; while [ $i -lt %d ]; do i=$((i+1)); echo $i; sleep 0.1; done`, n)}
		id, err := c.Client().Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: 2 * time.Minute}, Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		counts[id] = n
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			b0, _ := os.ReadFile(out(id, "a0", 0))
			b1, _ := os.ReadFile(out(id, "a1", 1))
			if strings.Count(string(b0), "\n") >= 2 && strings.Count(string(b1), "\n") >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d did not start: %q %q", id, b0, b1)
			}
		}
	}
	start := time.Now()
	names, err := c.RollingRestart(context.Background(), "", 30*time.Second)
	if err != nil || !slices.Equal(names, []string{"a1", "a0"}) {
		t.Fatalf("RollingRestart: %v, %v; want a1 then a0", names, err)
	}
	t.Logf("rolling restart of 2 agents: %v", time.Since(start).Round(time.Millisecond))
	rec, err := Load(o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range counts {
		var j api.Job
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if j, err = rec.Client().Job(context.Background(), id); err == nil && j.State.Done() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d not ended: %+v %v", id, j, err)
			}
		}
		if j.State != api.Completed {
			t.Errorf("job %d (%d lines) is %s (%s)", id, n, j.State, j.Reason)
			continue
		}
		want := "start"
		for i := 1; i <= n; i++ {
			want += " " + strconv.Itoa(i)
		}
		for i, r := range j.Ranks {
			b, _ := os.ReadFile(out(id, r.Node, i))
			if got := strings.Join(strings.Fields(string(b)), " "); got != want {
				t.Errorf("job %d rank %d on %s: %q, want one run", id, i, r.Node, got)
			}
		}
	}

	plain := &Cluster{Agents: []Agent{{Ready: Ready{Name: "a0"}, Args: []string{"agent"}}}}
	if _, err := plain.RollingRestart(context.Background(), "", time.Second); err == nil || !strings.Contains(err.Error(), "--keep-ranks") {
		t.Errorf("a cluster without --keep-ranks: %v", err)
	}
}
