package jss_test

import (
	"testing"
	"time"

	"github.com/cosched/cosched/gang/hosts"
	"github.com/cosched/cosched/jss"
)

func eqConfig(eq jss.EQSpatial, hs ...hosts.Host) jss.HostsConfig {
	return jss.HostsConfig{Scheduler: hosts.Config{Hosts: hs}, EQ: &eq}
}

var host8 = hosts.Host{Name: "H", Processors: 8}

// Two 8-processor jobs of 10m on an 8-processor host. Job 1 runs alone
// from 0 on all 8. At 6m job 2 arrives (the last repartition, at 0, is
// 5m or more ago): 4 each, both at 1/2 speed. Job 1 has 4m left → ends at
// 6m + 8m = 14m. Then job 2 (4m done of 10m in 8m at 1/2) gets all 8: 6m
// left → ends at 20m.
func TestEQSpatialPartitionAndSpeedDown(t *testing.T) {
	got, st := runHosts(t, eqConfig(jss.DefaultEQSpatial(), host8), []jss.Job{hjob(1, 0, 8, 0, 10*mn), hjob(2, 6*mn, 8, 0, 10*mn)})
	wantSpans(t, got, map[int64]span{1: {0, 14 * mn}, 2: {6 * mn, 20 * mn}})
	// Repartitions at 0, 6m and 14m (an empty host is not repartitioned).
	if st.Repartitions != 3 || st.MaxOnHost != 2 {
		t.Errorf("stats %+v, want 3 repartitions, 2 jobs at most", st)
	}
}

// Rate limit (5m). Job 1 (8 procs, 10m) from 0 on all 8. Job 2 (8, 10m)
// arrives at 2m: too soon to repartition and no processor is idle, so it
// waits on the host with none until 5m; then 4 each: job 1 has 5m left at
// 1/2 → ends 15m; job 2 has done 5m by then and runs alone: ends 20m.
// Its start is 5m, when it first got processors.
func TestEQSpatialRateLimit(t *testing.T) {
	got, _ := runHosts(t, eqConfig(jss.DefaultEQSpatial(), host8), []jss.Job{hjob(1, 0, 8, 0, 10*mn), hjob(2, 2*mn, 8, 0, 10*mn)})
	wantSpans(t, got, map[int64]span{1: {0, 15 * mn}, 2: {5 * mn, 20 * mn}})
	// With interval 0 it repartitions at 2m: job 1 has 8m left at 1/2 and
	// job 2 10m: job 1 ends at 18m, job 2 has done 8m and ends at 20m.
	got, _ = runHosts(t, eqConfig(jss.EQSpatial{}, host8), []jss.Job{hjob(1, 0, 8, 0, 10*mn), hjob(2, 2*mn, 8, 0, 10*mn)})
	wantSpans(t, got, map[int64]span{1: {0, 18 * mn}, 2: {2 * mn, 20 * mn}})
}

// Idle processors within the interval: job 1 (4 procs, 10m) alone on the
// 8-processor host gets its 4 (never more than its request). Job 2 (4,
// 10m) joins at 1m, too soon to repartition, and takes the 4 idle ones at
// once (up to the equal share 8/2): ends at 11m.
func TestEQSpatialIdleProcessors(t *testing.T) {
	got, _ := runHosts(t, eqConfig(jss.DefaultEQSpatial(), host8), []jss.Job{hjob(1, 0, 4, 0, 10*mn), hjob(2, mn, 4, 0, 10*mn)})
	wantSpans(t, got, map[int64]span{1: {0, 10 * mn}, 2: {mn, 11 * mn}})
}

// Integer split: two 7-processor jobs of 7m on a 7-processor host: 7/2 =
// 3, remainder 1 to the first admitted: job 1 gets 4 (speed 4/7), job 2
// gets 3 (3/7). Job 1 ends at 7m·7/4 = 12m15s; job 2 has done 12.25m·3/7
// = 5m15s and runs alone for the last 1m45s: ends at 14m. A job asking
// less than the share gets its request and the rest is shared: 2, 8, 8
// processors on 8 → 2, 3, 3 (job 3 2 procs × 4m ends at 4m).
func TestEQSpatialIntegerSplit(t *testing.T) {
	h7 := hosts.Host{Name: "H", Processors: 7}
	got, _ := runHosts(t, eqConfig(jss.DefaultEQSpatial(), h7), []jss.Job{hjob(1, 0, 7, 0, 7*mn), hjob(2, 0, 7, 0, 7*mn)})
	wantSpans(t, got, map[int64]span{1: {0, 12*mn + 15*time.Second}, 2: {0, 14 * mn}})
	// 2, 8, 8 on 8: share 8/3 = 2; job 3 (2 procs, 4m) gets its 2 and
	// ends at 4m; jobs 4 and 5 (8 procs, 3m) share the other 6: 3 each, at
	// 3/8. At 4m they have done 1.5m, but the last repartition was at 0:
	// job 3's 2 processors stay idle until 5m (no job lacks processors).
	// At 5m they have done 1.875m; 4 each (1/2) for the 1.125m left: they
	// end at 7m15s.
	got, _ = runHosts(t, eqConfig(jss.DefaultEQSpatial(), host8), []jss.Job{hjob(3, 0, 2, 0, 4*mn), hjob(4, 0, 8, 0, 3*mn), hjob(5, 0, 8, 0, 3*mn)})
	wantSpans(t, got, map[int64]span{3: {0, 4 * mn}, 4: {0, 7*mn + 15*time.Second}, 5: {0, 7*mn + 15*time.Second}})
}

// Memory is allocated in full: on a host of 8 processors and 4 GB, job 1
// (2 procs × 1.5 GB = 3 GB, 10m) leaves 1 GB; job 2 (2 × 1 GB) cannot join
// though 6 processors are idle, and starts when job 1 ends.
func TestEQSpatialMemory(t *testing.T) {
	h := hosts.Host{Name: "H", Processors: 8, Memory: 4 * gib}
	got, _ := runHosts(t, eqConfig(jss.DefaultEQSpatial(), h), []jss.Job{hjob(1, 0, 2, 3*gib/2, 10*mn), hjob(2, 0, 2, gib, 10*mn)})
	wantSpans(t, got, map[int64]span{1: {0, 10 * mn}, 2: {10 * mn, 20 * mn}})
}

// The 50 h variant: job 1 (8 procs, 100h) alone from 0; job 2 (8, 10h)
// arrives at 60h. Job 1 has run 60h > 50h: it keeps all 8, job 2 gets
// none until job 1 ends at 100h, then ends at 110h. Without the variant
// they split 4/4 at 60h: job 2 ends at 80h (10h at 1/2), job 1 has 30h
// left then and ends at 110h.
func TestEQSpatialFullAfter(t *testing.T) {
	jobs := []jss.Job{hjob(1, 0, 8, 0, 100*time.Hour), hjob(2, 60*time.Hour, 8, 0, 10*time.Hour)}
	got, _ := runHosts(t, eqConfig(jss.EQSpatial{Interval: 5 * mn, FullAfter: 50 * time.Hour}, host8), jobs)
	wantSpans(t, got, map[int64]span{1: {0, 100 * time.Hour}, 2: {100 * time.Hour, 110 * time.Hour}})
	got, _ = runHosts(t, eqConfig(jss.DefaultEQSpatial(), host8), jobs)
	wantSpans(t, got, map[int64]span{1: {0, 110 * time.Hour}, 2: {60 * time.Hour, 80 * time.Hour}})
}
