package jss_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss"
)

// oracleFamilies maps each family of pyss cases to the policies that must
// reproduce every finish time (see ../shared/oracles/pyss/README.md).
var oracleFamilies = []struct {
	glob     string
	policies []gang.Policy
}{
	{"basic_input.*", []gang.Policy{gang.FCFS, gang.EASY, gang.Conservative}},
	{"extreme_input.[01]", []gang.Policy{gang.FCFS, gang.EASY, gang.Conservative}},
	{"extreme_input.2", []gang.Policy{gang.EASY}},
	{"fcfs_input.*", []gang.Policy{gang.FCFS}},
	{"bf_input.*", []gang.Policy{gang.EASY, gang.Conservative}},
	{"easy_bf_input.*", []gang.Policy{gang.EASY}},
	{"cons_bf_input.*", []gang.Policy{gang.Conservative}},
	{"sjbf.*", []gang.Policy{gang.EASYSJBF}},
}

type oracleJob struct {
	label  string
	finish time.Duration
}

// readOracle parses one pyss case: "submit id estimate procs runtime ..."
// per line; the integer part of id is the expected finish time. Jobs whose
// estimate is below their runtime are not part of the case.
func readOracle(t *testing.T, path string) ([]jss.Job, []oracleJob) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var jobs []jss.Job
	var want []oracleJob
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fs := strings.Fields(text)
		if len(fs) < 5 {
			t.Fatalf("%s:%d: want at least 5 fields: %q", path, line, text)
		}
		num := func(i int) int {
			v, err := strconv.Atoi(fs[i])
			if err != nil {
				t.Fatalf("%s:%d: field %d: %v", path, line, i+1, err)
			}
			return v
		}
		submit, est, procs, run := num(0), num(2), num(3), num(4)
		if est < run {
			continue
		}
		finish, err := strconv.Atoi(strings.SplitN(fs[1], ".", 2)[0])
		if err != nil {
			t.Fatalf("%s:%d: job id %q: %v", path, line, fs[1], err)
		}
		sec := func(v int) time.Duration { return time.Duration(v) * time.Second }
		jobs = append(jobs, jss.Job{
			Job:     gang.Job{Submit: sec(submit), Processors: procs, Estimate: sec(est)},
			Number:  int64(len(jobs)),
			Runtime: sec(run),
		})
		want = append(want, oracleJob{label: fs[1], finish: sec(finish)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// pyss queues every submission as an event, so a case's lines need not
	// be in submit order (basic_input.16 is not); a Source must be.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].Submit < jobs[order[b]].Submit })
	sortedJobs := make([]jss.Job, len(jobs))
	sortedWant := make([]oracleJob, len(jobs))
	for i, o := range order {
		sortedJobs[i], sortedWant[i] = jobs[o], want[o]
		sortedJobs[i].Number = int64(i)
	}
	return sortedJobs, sortedWant
}

func TestPyssOracles(t *testing.T) {
	dir := sharedtest.Path(t, "oracles", "pyss")
	cases := 0
	for _, fam := range oracleFamilies {
		files, err := filepath.Glob(filepath.Join(dir, fam.glob))
		if err != nil || len(files) == 0 {
			t.Fatalf("no oracle files match %s (%v)", fam.glob, err)
		}
		for _, file := range files {
			for _, policy := range fam.policies {
				cases++
				t.Run(fmt.Sprintf("%s/%s", filepath.Base(file), policy), func(t *testing.T) {
					jobs, want := readOracle(t, file)
					cfg := jss.Config{Scheduler: gang.Config{Machine: gang.Machine{Processors: 100}, MPL: 1, Policy: policy}, Check: true}
					got := map[int64]time.Duration{}
					_, err := jss.Run(context.Background(), cfg, jss.SliceSource(jobs), func(r jss.Result) error {
						got[r.Number] = r.End
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					for i, w := range want {
						if got[int64(i)] != w.finish {
							t.Errorf("job %s (line order %d): finished at %v, want %v", w.label, i, got[int64(i)], w.finish)
						}
					}
				})
			}
		}
	}
	t.Logf("%d oracle case×policy runs", cases)
}
