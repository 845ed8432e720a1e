package mpi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// streamJob is a running job of an mpistream-like program
// (node/testdata/mpistream.c, mpi/testdata/wildstream.c): each rank
// writes "start", then "got N" each round, then "ok" to its own file,
// read while it runs, and the ranks stop once the file stop exists
// (COSCHED_TEST_STREAM_STOP).
type streamJob struct {
	t     *testing.T
	id    int64
	dir   string
	stop  string
	place []int
	done  chan []rankResult // the ranks' results once the job ends
}

// startStream starts prog on c for at most timeout, rank i on node
// place[i], its environment env and the stop file's.
func startStream(t *testing.T, c *cluster, prog string, place []int, timeout time.Duration, env ...string) *streamJob {
	dir := t.TempDir()
	s := &streamJob{t: t, id: c.nextID, dir: dir, stop: filepath.Join(dir, "stop"), place: place, done: make(chan []rankResult, 1)}
	c.env = append([]string{"COSCHED_TEST_STREAM_STOP=" + s.stop}, env...)
	go func() {
		// through sh: its stdout is a file, read while it runs
		s.done <- c.run(t, "/bin/sh", place, timeout, "-c", `exec "$0" >"$1-$COSCHED_RANK.out"`, prog, filepath.Join(dir, "rank"))
	}()
	return s
}

// out is the file of rank's output.
func (s *streamJob) out(rank int) string {
	return filepath.Join(s.dir, fmt.Sprintf("rank-%d.out", rank))
}

// report logs how each rank ended.
func (s *streamJob) report(res []rankResult) {
	for _, r := range res {
		s.t.Logf("rank %d: exit %d, at round %d; stderr %q", r.rank, r.exit, lastRound(s.out(r.rank)), r.err)
	}
}

// progress waits until every rank is past round after, failing the test
// if the job ends first or that takes over 60 s.
func (s *streamJob) progress(after int) {
	s.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		low := lastRound(s.out(0))
		for rk := range s.place {
			low = min(low, lastRound(s.out(rk)))
		}
		if low > after {
			return
		}
		select {
		case res := <-s.done:
			s.report(res)
			s.t.Fatal("the job ended early")
		default:
		}
		if time.Now().After(deadline) {
			os.WriteFile(s.stop, nil, 0o644)
			s.report(<-s.done)
			s.t.Fatalf("the ranks not all past round %d after 60 s", after)
		}
	}
}

// finish stops the ranks and waits for them, failing the test unless
// each made one whole run (streamRun).
func (s *streamJob) finish() []rankResult {
	s.t.Helper()
	if err := os.WriteFile(s.stop, nil, 0o644); err != nil {
		s.t.Fatal(err)
	}
	res := <-s.done
	for _, r := range res {
		if _, bad := streamRun(r, s.out(r.rank)); bad != "" {
			s.report(res)
			s.t.Fatal(bad)
		}
	}
	return res
}

// streamRun is rank r's output (in the file out) in lines and, unless r
// exited 0 after one whole run (start, got 1, got 2, …, ok: each message
// once and in order), what is wrong.
func streamRun(r rankResult, out string) (lines []string, bad string) {
	b, _ := os.ReadFile(out)
	f := strings.Split(strings.TrimSpace(string(b)), "\n")
	wrong := r.exit != 0 || len(f) < 3 || f[0] != "start" || f[len(f)-1] != "ok"
	for n := 1; !wrong && n < len(f)-1; n++ {
		wrong = f[n] != "got "+strconv.Itoa(n)
	}
	if wrong {
		bad = fmt.Sprintf("rank %d: exit %d, want 0 and one run (start, got 1…, ok); stderr %q; output ends %q", r.rank, r.exit, r.err, f[max(0, len(f)-5):])
	}
	return f, bad
}

// lastRound is the last "got N" of an mpistream rank's output (0: none).
func lastRound(path string) int {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if n, ok := strings.CutPrefix(lines[i], "got "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				return v
			}
		}
	}
	return 0
}
