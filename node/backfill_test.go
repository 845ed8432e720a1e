package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/sharing"
)

// runJobs submits each job once the previous ones are queued (the first
// once it runs) and waits for them all to complete.
func (c *testCluster) runJobs(specs ...api.JobSpec) []api.Job {
	c.t.Helper()
	var ids []int64
	for i, s := range specs {
		ids = append(ids, c.submit(s))
		if i == 0 {
			c.waitState(ids[0], api.Running, 20*time.Second)
		}
	}
	var out []api.Job
	for _, id := range ids {
		out = append(out, c.waitState(id, api.Completed, 30*time.Second))
	}
	return out
}

func sleepJob(name string, procs int, limit time.Duration, secs string) api.JobSpec {
	return api.JobSpec{Name: name, Command: []string{"sleep", secs}, Processors: procs, TimeLimit: api.Duration{D: limit}}
}

// sjf-bf in the runtime orders the queue by time limit: on 2 processors,
// with job 1 running on both, job 3 (limit 5 s) overtakes job 2 (limit
// 30 s), which arrived first and which FCFS or EASY would start first.
func TestRuntimeSJFBF(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 1, processors: 2, mode: sharing.Space, policy: gang.SJFBF})
	j := c.runJobs(sleepJob("long", 2, 20*time.Second, "1"), sleepJob("late", 2, 30*time.Second, "0.1"), sleepJob("short", 2, 5*time.Second, "0.1"))
	if j[2].Start.Before(*j[0].End) || !j[2].Start.Before(*j[1].Start) {
		t.Errorf("short job 3 started at %v, want after job 1 ended (%v) and before job 2 (%v)", j[2].Start, j[0].End, j[1].Start)
	}
	if j[1].Start.Before(*j[2].End) {
		t.Errorf("job 2 started at %v, before job 3 ended at %v", j[1].Start, j[2].End)
	}
	rep, err := c.client.Nodes(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if cs := rep.Cluster; cs == nil || cs.Policy != gang.SJFBF || cs.Reservations != "1" || cs.ReservationMode != gang.Dynamic || cs.Weights != nil {
		t.Errorf("cluster stats %+v, want sjf-bf with 1 dynamic reservation and no weights", cs)
	}
}

// The reservation depth reaches the runtime's core. fcfs-bf on 3
// processors, times in limits (s) from job 1's start: job 1 (2 procs,
// limit 10) runs; job 2 (2 procs, 10) is reserved [10,20); job 3 (3
// procs, 10) would be reserved [20,30) only with 2 reservations; job 4 (1
// proc, 25) fits beside job 1 and job 2, so with 1 reservation it starts
// at once, while with 2 it would delay job 3 and waits: it starts last,
// after job 3 has run.
func TestRuntimeReservationDepth(t *testing.T) {
	for _, tc := range []struct {
		n         int
		backfills bool
	}{{1, true}, {2, false}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) { testReservationDepth(t, tc.n, tc.backfills) })
	}
}

func testReservationDepth(t *testing.T, n int, backfills bool) {
	c := startCluster(t, clusterOpts{agents: 1, processors: 3, mode: sharing.Space, policy: gang.FCFSBF, backfill: gang.Backfill{Reservations: n}})
	j := c.runJobs(sleepJob("j1", 2, 10*time.Second, "1"), sleepJob("j2", 2, 10*time.Second, "0.1"),
		sleepJob("j3", 3, 10*time.Second, "0.1"), sleepJob("j4", 1, 25*time.Second, "0.1"))
	if backfills && !j[3].Start.Before(*j[0].End) {
		t.Errorf("%d reservation: job 4 started at %v, after job 1 ended at %v: not backfilled", n, j[3].Start, j[0].End)
	}
	if !backfills && j[3].Start.Before(*j[2].End) {
		t.Errorf("%d reservations: job 4 started at %v, before job 3 ended at %v: it delayed job 3's reservation", n, j[3].Start, j[2].End)
	}
	rep, err := c.client.Nodes(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(n)
	if cs := rep.Cluster; cs == nil || cs.Reservations != want || cs.ReservationMode != gang.Dynamic || cs.Weights == nil || *cs.Weights != (gang.Weights{Wait: 1}) {
		t.Errorf("cluster stats %+v, want %s dynamic reservations and fcfs-bf's weights", cs, want)
	}
}
