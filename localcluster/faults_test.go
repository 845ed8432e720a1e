package localcluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/sharing"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/clusterkey"
)

// The leader of three controllers is killed (SIGKILL) again and again while
// a stream of short jobs is submitted; after each kill another leads and Up
// restarts the dead one with its journal. At the end every submission that
// was answered with an id has completed (no lost job), and no rank of this
// cluster still runs (no orphan).
func TestRepeatedLeaderKillsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents and kills them")
	}
	start := time.Now()
	end := start.Add(90 * time.Second) // the whole test's budget
	if d, ok := t.Deadline(); ok && d.Add(-5*time.Second).Before(end) {
		end = d.Add(-5 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()

	exe := buildCosched(t)
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Processors, o.Controllers = exe, t.TempDir(), 2, 2, 3
	o.Mode, o.MPL, o.RealtimePriority = sharing.Gang, 2, 0
	c, err := Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if rec, err := Load(o.StateDir); err == nil {
			c = rec // the latest record (Up rewrites it on every restart)
		}
		if err := c.Down(5 * time.Second); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	dumpLogs := func() {
		for _, a := range c.Agents {
			log, _ := os.ReadFile(a.Log)
			lines := strings.Split(string(log), "\n")
			t.Logf("%s (last lines of %s):\n%s", a.Name, a.Log, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	}

	var apis []string
	for _, a := range c.Agents {
		apis = append(apis, a.API)
	}
	key, err := clusterkey.Load(KeyFile(o.StateDir))
	if err != nil {
		t.Fatal(err)
	}
	// The compute agents (never killed) first: they forward to the leader.
	client := api.NewKeyClient(key, apis[3], apis...)
	leader := func(not string) string {
		began, seen := time.Now(), map[string]int{} // what the wait saw, logged when it is long
		defer func() {
			if time.Since(began) > 5*time.Second {
				t.Logf("waiting for a leader other than %q took %v; answers: %v", not, time.Since(began).Round(time.Millisecond), seen)
			}
		}()
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			rep, err := client.Nodes(rctx, false)
			rcancel()
			if err != nil {
				seen[err.Error()]++
			}
			for _, n := range rep.Nodes {
				if n.Leader && n.Name != not {
					return n.Name
				}
				if n.Leader {
					seen["leader "+n.Name]++
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		dumpLogs()
		t.Fatalf("no leader (other than %q) before the deadline", not)
		return ""
	}

	// The submitter: one short job every 100 ms, a failed submission
	// retried; only an answered id counts as accepted.
	var (
		mu       sync.Mutex
		accepted []int64
		failures = map[string]int{} // by kind: what a client sees of a failover
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	sub := api.NewKeyClient(key, apis[4], apis...)
	sub.RetryFor = 3 * time.Second
	go func() {
		defer close(done)
		spec := api.JobSpec{Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"sleep", "0.2"}}
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			id, err := sub.Submit(sctx, spec)
			scancel()
			mu.Lock()
			if err == nil && id > 0 {
				accepted = append(accepted, id)
			} else {
				failures[failureKind(err)]++
			}
			mu.Unlock()
		}
	}()
	stopSubmitting := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopSubmitting()

	const kills = 3
	time.Sleep(time.Second) // a stream is under way before the first kill
	for k := range kills {
		victim := leader("")
		var pid int
		for _, a := range c.Agents {
			if a.Name == victim {
				pid = a.PID
			}
		}
		if pid == 0 {
			t.Fatalf("leader %s is not an agent of the record %+v", victim, c.Agents)
		}
		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for alive(pid) {
			time.Sleep(10 * time.Millisecond)
		}
		next := leader(victim)
		took := time.Since(killed)
		o.Timeout = min(30*time.Second, time.Until(end))
		upStart := time.Now()
		if c, err = Up(ctx, o); err != nil {
			t.Fatalf("kill %d: Up to restart %s: %v", k+1, victim, err)
		}
		if dead := c.Dead(); len(dead) != 0 {
			t.Fatalf("kill %d: dead after Up: %v", k+1, dead)
		}
		mu.Lock()
		n, f := len(accepted), fmt.Sprint(failures)
		mu.Unlock()
		t.Logf("kill %d: %s (pid %d) killed, %s leads after %v, %s restarted in %v; %d accepted, failed submissions so far %s",
			k+1, victim, pid, next, took.Round(time.Millisecond), victim, time.Since(upStart).Round(time.Millisecond), n, f)
		time.Sleep(time.Second) // submissions go on under the new leader
	}
	stopSubmitting()
	mu.Lock()
	ids := slices.Clone(accepted)
	t.Logf("%d submissions accepted; failed ones (not counted as jobs): %v", len(ids), failures)
	mu.Unlock()
	if len(ids) == 0 {
		t.Fatal("no submission was accepted")
	}

	// Every accepted id completes; the cluster has nothing else to run.
	var jobs map[int64]api.Job
	for {
		jctx, jcancel := context.WithTimeout(ctx, 5*time.Second)
		list, err := client.Jobs(jctx, true)
		jcancel()
		if err == nil {
			jobs = map[int64]api.Job{}
			busy := false
			for _, j := range list {
				jobs[j.ID] = j
				busy = busy || j.State == api.Pending || j.State == api.Running
			}
			if !busy && (len(lost(ids, jobs)) == 0 || len(jobs) > 0 && !missingAny(ids, jobs)) { // all ended (or every id known and ended)
				break
			}
		}
		if ctx.Err() != nil || time.Until(end) < 3*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	missing := lost(ids, jobs)
	var extra []int64 // submissions whose answer was lost but which were taken
	for id := range jobs {
		if !slices.Contains(ids, id) {
			extra = append(extra, id)
		}
	}
	slices.Sort(extra)

	// Orphans: ranks of this cluster alive once every job ended (a short
	// grace for a rank between its end being reported and its exit).
	orphans := clusterRanks(t, o.StateDir)
	for i := 0; len(orphans) > 0 && i < 20; i++ {
		time.Sleep(100 * time.Millisecond)
		orphans = clusterRanks(t, o.StateDir)
	}
	t.Logf("lost jobs: %d, orphaned ranks: %d; %d accepted ids %d..%d; %d jobs known not accepted %v; %v in all",
		len(missing), len(orphans), len(ids), slices.Min(ids), slices.Max(ids), len(extra), extra, time.Since(start).Round(time.Millisecond))
	if len(missing) > 0 || len(orphans) > 0 {
		for _, id := range missing {
			if j, ok := jobs[id]; ok {
				t.Logf("job %d: %s %s nodes %v", id, j.State, j.Reason, j.Nodes)
			} else {
				t.Logf("job %d: unknown to the cluster", id)
			}
		}
		for _, p := range orphans {
			t.Logf("orphan: %s", p)
		}
		dumpLogs()
		t.Fatalf("lost jobs %v, orphaned ranks %d", missing, len(orphans))
	}
}

// failureKind sorts a failed submission: a client told to retry later
// (503), an agent that did not answer, or the error itself.
func failureKind(err error) string {
	var apiErr *api.Error
	switch {
	case err == nil:
		return "no id"
	case errors.As(err, &apiErr) && apiErr.Status == 503:
		return "503"
	case errors.As(err, &apiErr):
		return fmt.Sprintf("%d %s", apiErr.Status, apiErr.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "unreachable"
	}
}

// missingAny reports whether jobs lacks one of ids.
func missingAny(ids []int64, jobs map[int64]api.Job) bool {
	for _, id := range ids {
		if _, ok := jobs[id]; !ok {
			return true
		}
	}
	return false
}

// lost lists the ids that jobs does not have as completed.
func lost(ids []int64, jobs map[int64]api.Job) []int64 {
	var out []int64
	for _, id := range ids {
		if j, ok := jobs[id]; !ok || j.State != api.Completed {
			out = append(out, id)
		}
	}
	return out
}

// clusterRanks describes the live processes that are ranks of the cluster
// in dir: a COSCHED_JOB in their environment, their stdout under dir.
func clusterRanks(t *testing.T, dir string) []string {
	t.Helper()
	ranks, err := proctest.Ranks(proctest.OutputUnder(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ranks {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.PID))
		out = append(out, fmt.Sprintf("pid %d job %d: %s (stdout %s)", r.PID, r.Job, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "), r.Stdout))
	}
	return out
}
