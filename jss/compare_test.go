package jss_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/jss"
)

// The hand-worked trace of TestSimulateTracePFCFS (machine of 10).
const compareTrace = `; MaxProcs: 10
1 0 -1 30 4 -1 -1 4 30 -1 1 1 1 -1 -1 -1 -1 -1
2 0 -1 30 3 -1 -1 3 30 -1 1 1 1 -1 -1 -1 -1 -1
3 0 -1 50 2 -1 -1 2 50 -1 1 1 1 -1 -1 -1 -1 -1
4 5 -1 20 6 -1 -1 6 20 -1 1 1 1 -1 -1 -1 -1 -1
5 6 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
`

// Several policies over standard input: results in the policies' order,
// pfcfs related to the fcfs among them, one schedule file per policy.
func TestCompareWritesEachPolicysSchedule(t *testing.T) {
	in, err := jss.InputFrom("-", strings.NewReader(compareTrace))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := jss.Comparison{
		Trace:    jss.TraceOptions{Input: in, Conventions: jss.DefaultConventions(), Check: true},
		Policies: []gang.Policy{jss.PolicyPFCFS, gang.FCFS},
		Engines:  jss.Engines{PFCFS: jss.PFCFSConfig{Scheduler: pfcfs.DefaultConfig(0), Check: true}},
		Parallel: 2,
		SWFPath:  filepath.Join(dir, "out.swf"), JobsCSVPath: filepath.Join(dir, "jobs.csv"),
	}
	res, err := jss.Compare(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Policy != jss.PolicyPFCFS || res[1].Policy != gang.FCFS || res[0].Trace != "<stdin>" {
		t.Fatalf("results %+v", res)
	}
	if p := res[0].PFCFS; p == nil || p.VsFCFS == nil || p.VsFCFS.Makespan != res[0].Metrics.Makespan/res[1].Metrics.Makespan {
		t.Errorf("pfcfs relative to fcfs: %+v", p)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"jobs.fcfs.csv", "jobs.pfcfs.csv", "out.fcfs.swf", "out.pfcfs.swf"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	// One policy keeps the names as given.
	c.Policies, c.SWFPath, c.JobsCSVPath = []gang.Policy{gang.EASY}, filepath.Join(dir, "one.swf"), ""
	if _, err := jss.Compare(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "one.swf")); err != nil {
		t.Error(err)
	}
}

// A run that fails leaves no schedule behind; a fault of the trace is
// said once, as the trace's (not as a policy's).
func TestCompareFailureLeavesNoFiles(t *testing.T) {
	in, err := jss.InputFrom("-", strings.NewReader(compareTrace+"6 7 -1 5O 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := jss.Comparison{
		Trace:    jss.TraceOptions{Input: in, Conventions: jss.DefaultConventions()},
		Policies: []gang.Policy{gang.FCFS, gang.EASY},
		SWFPath:  filepath.Join(dir, "out.swf"),
	}
	var te *jss.TraceError
	if _, err := jss.Compare(context.Background(), c); !errors.As(err, &te) || strings.Contains(err.Error(), "policy ") || strings.Count(err.Error(), `"5O"`) != 1 {
		t.Errorf("Compare = %v, want the trace's error naming the bad field once, no policy", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left after a failed run: %v", entries)
	}
}

func TestInputFromRefusesWhatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := jss.InputFrom(dir, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := jss.InputFrom(filepath.Join(dir, "absent.swf"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if got := jss.WithPolicy("a/out.swf", gang.EASY); got != "a/out.easy.swf" {
		t.Errorf("WithPolicy = %q", got)
	}
}

// A trace file whose line never ends (/dev/zero) is still read under the
// run's context: cancelling it stops the runs (it took a SIGKILL).
func TestCompareStopsInAnEndlessLine(t *testing.T) {
	in, err := jss.InputFrom("/dev/zero", nil)
	if err != nil {
		t.Skipf("no /dev/zero: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := jss.Compare(ctx, jss.Comparison{Trace: jss.TraceOptions{Input: in, Conventions: jss.DefaultConventions()},
			Policies: []gang.Policy{gang.EASY, gang.FCFS}, Parallel: 2})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // liveness only
		t.Fatal("still reading 30s after the cancel")
	}
}
