package jss_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/hosts"
	"github.com/cosched/cosched/jss"
)

const (
	gib = int64(1) << 30
	mn  = time.Minute
)

// hjob is job n submitted at submit, procs processors of memPP bytes
// each, runtime = estimate = run.
func hjob(n int64, submit time.Duration, procs int, memPP int64, run time.Duration) jss.Job {
	return jss.Job{Job: gang.Job{Submit: submit, Processors: procs, Memory: memPP, Estimate: run}, Number: n, Runtime: run}
}

type span struct{ start, end time.Duration }

func runHosts(t *testing.T, cfg jss.HostsConfig, jobs []jss.Job) (map[int64]span, jss.HostsStats) {
	t.Helper()
	cfg.Check = true
	out := map[int64]span{}
	st, err := jss.RunHosts(context.Background(), cfg, jss.SliceSource(jobs), func(r jss.Result) error {
		out[r.Number] = span{r.Start, r.End}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

func wantSpans(t *testing.T, got map[int64]span, want map[int64]span) {
	t.Helper()
	for n, w := range want {
		if g, ok := got[n]; !ok || g != w {
			t.Errorf("job %d: ran %v–%v (%v), want %v–%v", n, g.start, g.end, ok, w.start, w.end)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d jobs ended, want %d", len(got), len(want))
	}
}

// Immediate service on one host of 4 processors, fcfs-bf, quantum 1m,
// victims after 10m. Job 0 (4 procs, 5m) fills the host from 0; job 1 (2,
// 100m), submitted at 0, cannot start and nothing has run 10m: no quantum;
// it starts at 5m, and so does job 2 (2, 100m, submitted at 5m).
//
// At 20m job 3 (2 procs, 30s) cannot start. Current slowdowns (now −
// submit) / received: job 1 20m/15m = 1.33, job 2 15m/15m = 1: job 2 is
// preempted, job 3 runs 20m–20m30s and finishes in its quantum; job 2
// resumes at 20m30s and ends at 105m30s.
//
// At 30m job 4 (2 procs, 5m) cannot start. Job 2 has run uninterrupted
// only 9m30s since it resumed: not a victim; job 1 (30m/25m) is. Job 4
// runs 30m–31m, is killed and queued; job 1 resumes and ends at 106m. Job
// 4 starts again when job 2 ends, 105m30s, and ends at 110m30s.
func TestImmediateService(t *testing.T) {
	is := jss.DefaultImmediateService()
	cfg := jss.HostsConfig{Scheduler: hosts.Config{Policy: gang.FCFSBF, Hosts: []hosts.Host{{Name: "H", Processors: 4}}}, IS: &is}
	got, st := runHosts(t, cfg, []jss.Job{
		hjob(0, 0, 4, 0, 5*mn), hjob(1, 0, 2, 0, 100*mn), hjob(2, 5*mn, 2, 0, 100*mn),
		hjob(3, 20*mn, 2, 0, 30*time.Second), hjob(4, 30*mn, 2, 0, 5*mn),
	})
	wantSpans(t, got, map[int64]span{
		0: {0, 5 * mn}, 1: {5 * mn, 106 * mn}, 2: {5 * mn, 105*mn + 30*time.Second},
		3: {20 * mn, 20*mn + 30*time.Second}, 4: {105*mn + 30*time.Second, 110*mn + 30*time.Second},
	})
	if st.ISStarts != 2 || st.ISDone != 1 || st.ISKilled != 1 || st.Preemptions != 2 || st.ISLost != 2*60 {
		t.Errorf("stats %+v, want 2 quanta, 1 done, 1 killed, 2 preemptions, 120 processor-s lost", st)
	}
}

// Memory: host of 4 processors and 8 GB. Job 1 (4 procs, no memory) runs
// 0–100m. At 20m job 2 (1 proc × 2 GB) needs more than the 1 GB of
// immediate service: it queues. Job 3 (1 proc × 512 MB, 10s) gets a
// quantum on one of job 1's processors (job 1 preempted whole): 20m–20m10s;
// job 1 ends at 100m10s, and job 2 runs then.
func TestImmediateServiceMemoryLimit(t *testing.T) {
	is := jss.DefaultImmediateService()
	cfg := jss.HostsConfig{Scheduler: hosts.Config{Policy: gang.FCFSBF, Hosts: []hosts.Host{{Name: "H", Processors: 4, Memory: 8 * gib}}}, IS: &is}
	got, st := runHosts(t, cfg, []jss.Job{
		hjob(1, 0, 4, 0, 100*mn), hjob(2, 20*mn, 1, 2*gib, 10*mn), hjob(3, 20*mn, 1, gib/2, 10*time.Second),
	})
	end1 := 100*mn + 10*time.Second
	wantSpans(t, got, map[int64]span{1: {0, end1}, 2: {end1, end1 + 10*mn}, 3: {20 * mn, 20*mn + 10*time.Second}})
	if st.ISStarts != 1 || st.Preemptions != 1 {
		t.Errorf("stats %+v, want 1 quantum, 1 preemption", st)
	}
}

// Hosts of different sizes end to end: A (2 procs, 1 GB), B (8 procs,
// unlimited memory). Job 1 (2 procs × 1 GB = 2 GB) fits only B by memory;
// job 2 (9 procs) fits no host and is dropped and counted.
func TestRunHostsDropsUnfitJobs(t *testing.T) {
	cfg := jss.HostsConfig{Scheduler: hosts.Config{Policy: gang.FCFSBF, Hosts: []hosts.Host{{Name: "A", Processors: 2, Memory: gib}, {Name: "B", Processors: 8}}}}
	got, st := runHosts(t, cfg, []jss.Job{hjob(1, 0, 2, gib, mn), hjob(2, 0, 9, 0, mn), hjob(3, 0, 2, 0, mn)})
	// Job 3 takes A (fewest free processors, 2; no memory needed).
	wantSpans(t, got, map[int64]span{1: {0, mn}, 3: {0, mn}})
	if st.Unfit != 1 || st.Jobs != 2 {
		t.Errorf("stats %+v, want 1 unfit, 2 jobs", st)
	}
}

// ReadMachineFile names the file and line of a bad host, and the file it
// cannot open.
func TestReadMachineFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hosts.txt")
	if err := os.WriteFile(path, []byte("# two hosts\nA 4 1GB\nB 8 -\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hs, err := jss.ReadMachineFile(path)
	if err != nil || len(hs) != 2 || hs[0] != (hosts.Host{Name: "A", Processors: 4, Memory: gib}) || hs[1].Memory != 0 {
		t.Errorf("hosts %+v, %v", hs, err)
	}
	if err := os.WriteFile(path, []byte("A 4 1GB\nB x 2GB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := jss.ReadMachineFile(path); err == nil || !strings.Contains(err.Error(), path+`:2: processors "x"`) {
		t.Errorf("bad line: %v", err)
	}
	if _, err := jss.ReadMachineFile(filepath.Join(dir, "none.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
