package pmi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mpicc compiles a test program with MPICH's wrapper, or skips.
func mpicc(t *testing.T, src string) string {
	t.Helper()
	// MPICH's own wrapper by name: with Open MPI installed too, "mpicc" is
	// whichever the alternatives pick.
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		cc, err = exec.LookPath("mpicc")
	}
	if err != nil {
		t.Skip("mpicc not found: install Debian's mpich and libmpich-dev (.ci/run does)")
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	if b, err := exec.Command(cc, "-O2", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc %s: %v\n%s", src, err, b)
	}
	return out
}

// runLocal runs a job's ranks as plain children with a Server per "node"
// ("a" and "b") answering their PMI, rank r on nodes[r], their barriers
// gathered by one Gather, and returns each rank's exit error and output.
func runLocal(t *testing.T, prog string, nodes []string, args ...string) (errs []error, outs []string, failure string) {
	t.Helper()
	size := len(nodes)
	var srvs map[string]*Server
	gather := NewGather(nodes)
	var mu sync.Mutex
	var failed []string
	var cmds []*exec.Cmd
	mk := func(here string) *Server {
		return NewServer(Hooks{
			Barrier: func(job int64, b Barrier) {
				mu.Lock()
				done, to, err := gather.In(here, b)
				mu.Unlock()
				if err != nil {
					t.Errorf("gather: %v", err)
					return
				}
				if done != nil {
					for _, n := range to {
						go srvs[n].BarrierDone(job, *done)
					}
				}
			},
			Fail: func(job int64, reason string) {
				mu.Lock()
				defer mu.Unlock()
				failed = append(failed, reason)
				for _, c := range cmds {
					_ = c.Process.Kill()
				}
			},
		}, nil)
	}
	srvs = map[string]*Server{"a": mk("a"), "b": mk("b")}
	dir := t.TempDir()
	outBufs := make([]*bytes.Buffer, size)
	for n, s := range srvs {
		s.AddJob(7, nodes, n)
	}
	for r := range size {
		errPath := filepath.Join(dir, "err"+itoa(r))
		child, err := srvs[nodes[r]].Rank(7, r, errPath)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := os.Create(errPath)
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(prog, args...)
		c.Env = append(os.Environ(), Env(nodes, r)...)
		c.ExtraFiles = []*os.File{child}
		outBufs[r] = &bytes.Buffer{}
		c.Stdout, c.Stderr = outBufs[r], ef
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		child.Close()
		ef.Close()
		mu.Lock()
		cmds = append(cmds, c)
		mu.Unlock()
	}
	timer := time.AfterFunc(60*time.Second, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
	})
	defer timer.Stop()
	for r, c := range cmds {
		errs = append(errs, c.Wait())
		b, _ := os.ReadFile(filepath.Join(dir, "err"+itoa(r)))
		outs = append(outs, outBufs[r].String()+string(b))
	}
	for _, s := range srvs {
		s.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	return errs, outs, strings.Join(failed, "; ")
}

// The real MPICH library starts through the server and its ranks talk:
// point-to-point, non-blocking, collectives, split, each checked by the
// program itself.
func TestMPICHRanksStartAndTalk(t *testing.T) {
	prog := mpicc(t, "testdata/ring.c")
	errs, outs, failure := runLocal(t, prog, []string{"a", "b", "a", "b"}, "2")
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v\n%s", r, err, outs[r])
		} else if want := "rank " + itoa(r) + " of 4 ok local " + itoa(r/2); !strings.Contains(outs[r], want) {
			t.Errorf("rank %d said %q, want %q", r, outs[r], want)
		}
	}
	if failure != "" {
		t.Errorf("job failed: %s", failure)
	}
}

// MPI's name service, which cosched does not serve, fails the calls
// (MPI_Publish_name, MPI_Lookup_name), not the job.
func TestMPICHNameServiceRefused(t *testing.T) {
	prog := mpicc(t, "testdata/ring.c")
	errs, outs, failure := runLocal(t, prog, []string{"a", "b"}, "publish")
	for r, err := range errs {
		if want := "rank " + itoa(r) + " of 2 name service refused"; err != nil || !strings.Contains(outs[r], want) {
			t.Errorf("rank %d: %v, said %q, want %q", r, err, outs[r], want)
		}
	}
	if failure != "" {
		t.Errorf("job failed: %s", failure)
	}
}

// MPI_Abort from one rank fails the job with its rank, exit code and
// message, and no rank is left running.
func TestMPICHAbort(t *testing.T) {
	prog := mpicc(t, "testdata/ring.c")
	errs, outs, failure := runLocal(t, prog, []string{"a", "a", "b"}, "abort")
	if !strings.Contains(failure, "rank 2 called MPI_Abort/PMI_Abort (exit code 3)") || !strings.Contains(failure, "application called MPI_Abort") {
		t.Errorf("failure %q, want rank 2's abort with code 3 and MPICH's message", failure)
	}
	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d exited cleanly after an abort:\n%s", r, outs[r])
		}
	}
	t.Logf("reason: %s\nrank 2 stderr:\n%s", failure, outs[2])
}
