package node_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/pmix"
	"github.com/cosched/cosched/sharing"
)

// sharedPMIx is what pmixKit builds, once for the package's tests;
// TestMain removes its directory.
var sharedPMIx struct {
	once            sync.Once
	dir, lib, check string
	skip            string
	err             error

	// Open MPI's own examples (pmix/testdata/ompi-examples), built by
	// ompiExamples: program name to binary.
	examplesOnce sync.Once
	examples     map[string]string
	examplesErr  error
}

// pmixKit builds cosched's PMIx helper (pmix/build.sh) into a library
// directory for the agents and the Open MPI check program
// (pmix/testdata/check.c) with Open MPI's mpicc, or skips the test
// without them (.ci/run installs openmpi-bin, libopenmpi-dev and
// libpmix-dev).
func pmixKit(t testing.TB) (lib, check string) {
	t.Helper()
	k := &sharedPMIx
	k.once.Do(func() {
		if _, err := exec.LookPath("mpicc.openmpi"); err != nil {
			k.skip = "no mpicc.openmpi: apt-get install openmpi-bin libopenmpi-dev libpmix-dev (.ci/run does)"
			return
		}
		if k.dir, k.err = os.MkdirTemp("", "cosched-node-pmix"); k.err != nil {
			return
		}
		k.lib = filepath.Join(k.dir, "lib")
		out, err := exec.Command("sh", filepath.Join("..", "pmix", "build.sh"), k.lib).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
			k.skip = "PMIx helper not built: " + strings.TrimSpace(string(out))
			return
		}
		if err != nil {
			k.err = fmt.Errorf("pmix/build.sh: %v\n%s", err, out)
			return
		}
		k.check = filepath.Join(k.dir, "check")
		if out, err := exec.Command("mpicc.openmpi", "-O2", "-o", k.check, filepath.Join("..", "pmix", "testdata", "check.c")).CombinedOutput(); err != nil {
			k.err = fmt.Errorf("mpicc.openmpi: %v\n%s", err, out)
		}
	})
	switch {
	case k.err != nil:
		t.Fatal(k.err)
	case k.skip != "":
		t.Skip(k.skip)
	}
	return k.lib, k.check
}

// ompiExampleNames are Open MPI's example programs the tests run
// (pmix/testdata/ompi-examples/NAME.c, copied unmodified from Open MPI).
var ompiExampleNames = []string{"hello_c", "ring_c", "connectivity_c"}

// ompiExamples builds Open MPI's example programs with mpicc.openmpi
// beside the check program, once, and returns the helper directory and
// each program's binary by name.
func ompiExamples(t testing.TB) (lib string, bin map[string]string) {
	t.Helper()
	lib, _ = pmixKit(t)
	k := &sharedPMIx
	k.examplesOnce.Do(func() {
		k.examples = map[string]string{}
		for _, name := range ompiExampleNames {
			exe := filepath.Join(k.dir, name)
			src := filepath.Join("..", "pmix", "testdata", "ompi-examples", name+".c")
			if out, err := exec.Command("mpicc.openmpi", "-O2", "-o", exe, src).CombinedOutput(); err != nil {
				k.examplesErr = fmt.Errorf("mpicc.openmpi %s: %v\n%s", src, err, out)
				return
			}
			k.examples[name] = exe
		}
	})
	if k.examplesErr != nil {
		t.Fatal(k.examplesErr)
	}
	return lib, k.examples
}

// runOMPIExamples runs each of Open MPI's example programs as a 4-rank
// --mpi pmix job on c and checks what the programs themselves print:
// hello's greeting from every rank, ring's token counted down to 0 and
// every rank's exit, connectivity's verdict after every pair exchanged.
func runOMPIExamples(t *testing.T, c *testCluster, bin map[string]string) {
	t.Helper()
	for _, name := range ompiExampleNames {
		id := c.submit(api.JobSpec{Command: []string{bin[name]}, Processors: 4, MPI: api.MPIPMIx, Env: ompiEnv,
			TimeLimit: api.Duration{D: 3 * time.Minute}})
		j := c.waitState(id, api.Completed, 3*time.Minute)
		if len(j.Ranks) != 4 {
			t.Fatalf("%s: job %d ranks %+v, want 4", name, id, j.Ranks)
		}
		for _, r := range j.Ranks {
			out := c.rankOutput(id, r.Rank)
			var want []string
			switch name {
			case "hello_c":
				want = []string{fmt.Sprintf("Hello, world, I am %d of 4, (Open MPI v4.1", r.Rank)}
			case "ring_c":
				want = []string{fmt.Sprintf("Process %d exiting", r.Rank)}
				if r.Rank == 0 {
					want = append(want, "Process 0 sending 10 to 1, tag 201 (4 processes in ring)", "Process 0 decremented value: 0")
				}
			case "connectivity_c":
				if r.Rank == 0 {
					want = []string{"Connectivity test on 4 processes PASSED."}
				}
			}
			if r.Code != 0 {
				t.Errorf("%s: job %d rank %d on %s exited %d", name, id, r.Rank, r.Node, r.Code)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%s: job %d rank %d on %s: output %q, want %q", name, id, r.Rank, r.Node, out, w)
				}
			}
		}
		t.Logf("%s: job %d %s in %v; rank 0: %q", name, id, j.State, j.Elapsed.D, lastLine(c.rankOutput(id, 0)))
		c.waitGone(id)
	}
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// removePMIxKit removes what pmixKit built.
func removePMIxKit() {
	if sharedPMIx.dir != "" {
		os.RemoveAll(sharedPMIx.dir)
	}
}

// ompiEnv tells Open MPI's ranks to yield the processor while they wait:
// the test agents share the machine's two cores, so ranks of one job
// share a core, and a rank spinning for its peer's message holds that
// core for its whole time slice (as in production with more ranks than
// processors; cosched gives each rank its own).
var ompiEnv = []string{"OMPI_MCA_mpi_yield_when_idle=1"}

// pmixCluster starts a test cluster whose agents find the helper in lib.
// Its agents run at real-time priority: at normal priority on a loaded
// machine they starve, and Open MPI's MPI_Init, whose fences cross them,
// took 10 to 40 s instead of 1.
func pmixCluster(t testing.TB, lib string, o clusterOpts) *testCluster {
	o.configure = func(cfg *node.Config) { cfg.MPILib = lib }
	if o.priority == 0 {
		o.priority = 50
	}
	return startCluster(t, o)
}

// checkRanks asserts every rank of a completed Open MPI check job said
// it passed, knowing its rank and the job's size.
func checkRanks(t *testing.T, c *testCluster, id int64, j api.Job) {
	t.Helper()
	for _, r := range j.Ranks {
		out := c.rankOutput(id, r.Rank)
		if want := fmt.Sprintf("OK rank %d of %d", r.Rank, len(j.Ranks)); r.Code != 0 || !strings.Contains(out, want) {
			t.Errorf("job %d rank %d on %s: %+v, output %q, want %q", id, r.Rank, r.Node, r, out, want)
		}
		t.Logf("job %d: %s", id, strings.TrimSpace(out))
	}
}

// An Open MPI program (point-to-point, collectives, a communicator split,
// each checked by the program) completes as a --mpi pmix job over two
// agents in space mode, and as two copies at MPL 2 in gang mode, whose
// ranks never run together. Open MPI's own examples (hello, ring,
// connectivity) pass their own checks as 4-rank jobs in space and bcs, and
// the program passes under local.
func TestOpenMPIJobSpaceAndGang(t *testing.T) {
	lib, check := pmixKit(t)
	t.Run("space", func(t *testing.T) {
		c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 2, mode: sharing.Space})
		id := c.submit(api.JobSpec{Command: []string{check}, Processors: 4, MPI: api.MPIPMIx, Env: ompiEnv, TimeLimit: api.Duration{D: 3 * time.Minute}})
		checkRanks(t, c, id, c.waitState(id, api.Completed, 3*time.Minute))
		c.waitGone(id)
		_, examples := ompiExamples(t)
		runOMPIExamples(t, c, examples)
	})
	// Under bcs Open MPI's ranks are time-shared as under gang; their
	// messages bypass the relays (docs/mpi.md).
	t.Run("bcs", func(t *testing.T) {
		_, examples := ompiExamples(t)
		c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 2, mode: sharing.BCS, mpl: 2, slice: 30 * time.Millisecond})
		runOMPIExamples(t, c, examples)
	})
	// Under local every placed rank runs and Linux shares the processors.
	t.Run("local", func(t *testing.T) {
		c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 2, mode: sharing.Local, mpl: 2})
		id := c.submit(api.JobSpec{Command: []string{check}, Processors: 4, MPI: api.MPIPMIx, Env: ompiEnv, TimeLimit: api.Duration{D: 3 * time.Minute}})
		checkRanks(t, c, id, c.waitState(id, api.Completed, 3*time.Minute))
		c.waitGone(id)
		waitNoHelper(t, id)
	})
	t.Run("gang", func(t *testing.T) {
		c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 1, mode: sharing.Gang, mpl: 2, slice: 40 * time.Millisecond, priority: 50})
		a := c.submit(api.JobSpec{Command: []string{check, "loop", "20"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
		b := c.submit(api.JobSpec{Command: []string{check, "loop", "20"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
		checkRanks(t, c, a, c.waitState(a, api.Completed, 2*time.Minute))
		checkRanks(t, c, b, c.waitState(b, api.Completed, 2*time.Minute))
		c.waitGone(a)
		c.waitGone(b)
		// Two long copies: their ranks never run together.
		a = c.submit(api.JobSpec{Command: []string{check, "loop", "100000000"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
		b = c.submit(api.JobSpec{Command: []string{check, "loop", "100000000"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
		rowsNeverTogether(t, c.waitExec(a, 2, "check"), c.waitExec(b, 2, "check"))
		for _, id := range []int64{a, b} {
			if err := c.client.Cancel(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}
		c.waitGone(a)
		c.waitGone(b)
		waitNoHelper(t, a)
		waitNoHelper(t, b)
	})
}

// A rank's MPI_Abort fails the job with the rank and the code; no
// process is left. A rank that ends without MPI_Finalize fails its job
// too.
func TestOpenMPIAbortAndNoFinalize(t *testing.T) {
	lib, check := pmixKit(t)
	c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 2, mode: sharing.Space})
	id := c.submit(api.JobSpec{Command: []string{check, "abort", "2", "5"}, Processors: 3, MPI: api.MPIPMIx, Env: ompiEnv})
	j := c.waitState(id, api.Failed, 60*time.Second)
	if !strings.Contains(j.Reason, "rank 2 called MPI_Abort") || !strings.Contains(j.Reason, "exit code 5") {
		t.Errorf("reason %q, want rank 2's abort and its code", j.Reason)
	}
	t.Logf("abort: %s", j.Reason)
	c.waitGone(id)

	id = c.submit(api.JobSpec{Command: []string{check, "nofinal"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
	j = c.waitState(id, api.Failed, 60*time.Second)
	if !strings.Contains(j.Reason, "without PMIx_Finalize") {
		t.Errorf("reason %q, want a rank that ended without finalizing", j.Reason)
	}
	t.Logf("no finalize: %s", j.Reason)
	c.waitGone(id)
}

// Cancelling a running Open MPI job under gang leaves no process: no
// rank, no helper.
func TestOpenMPICancel(t *testing.T) {
	lib, check := pmixKit(t)
	c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 1, mode: sharing.Gang, mpl: 2, slice: 30 * time.Millisecond})
	id := c.submit(api.JobSpec{Command: []string{check, "sleep"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
	c.waitState(id, api.Running, 60*time.Second)
	c.waitExec(id, 2, "check")
	if err := c.client.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	c.waitState(id, api.Cancelled, 60*time.Second)
	c.waitGone(id)
	waitNoHelper(t, id)
}

// A job's helper that dies (here killed) fails its job with the reason;
// the agent carries on.
func TestOpenMPIHelperDeathFailsJob(t *testing.T) {
	lib, check := pmixKit(t)
	c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 1, mode: sharing.Space})
	id := c.submit(api.JobSpec{Command: []string{check, "sleep"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
	c.waitExec(id, 2, "check")
	helpers := helperPIDs(pmix.Nspace(id))
	if len(helpers) != 2 {
		t.Fatalf("helpers of job %d: %v, want one per agent", id, helpers)
	}
	if err := syscall.Kill(helpers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j := c.waitState(id, api.Failed, 60*time.Second)
	if !strings.Contains(j.Reason, "PMIx server on") || !strings.Contains(j.Reason, "ended") {
		t.Errorf("reason %q, want the helper's end", j.Reason)
	}
	t.Logf("reason: %s", j.Reason)
	c.waitGone(id)
	waitNoHelper(t, id)
}

// waitNoHelper waits until no helper of the job runs (the helpers are
// the agents' children, outside the job's ranks).
func waitNoHelper(t *testing.T, id int64) {
	t.Helper()
	ns := pmix.Nspace(id)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := helperPIDs(ns)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("helpers of %s still running: %v", ns, left)
		}
	}
}

// helperPIDs lists the processes of this test's helpers serving nspace.
func helperPIDs(nspace string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && filepath.Base(args[0]) == pmix.HelperName && args[1] == nspace && os.Getppid() != pid {
			if ppid(pid) == os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	var state string
	var pp int
	fmt.Sscan(s[i+2:], &state, &pp)
	return pp
}

// A hostile client on a job's PMIx socket (garbage, then a flood) never
// takes the agent down: the job ends or runs on, and the agents run the
// next job.
func TestOpenMPIHostileClient(t *testing.T) {
	lib, check := pmixKit(t)
	c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 1, mode: sharing.Space})
	id := c.submit(api.JobSpec{Command: []string{check, "sleep"}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
	pids := c.waitExec(id, 2, "check")
	// The server's address is in the rank's environment.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`PMIX_SERVER_URI4=[^;]*;tcp4://([0-9.]+:[0-9]+)`).FindSubmatch(env)
	if m == nil {
		t.Fatalf("no PMIx server address in the rank's environment")
	}
	for _, payload := range [][]byte{
		[]byte("garbage\n"),
		append([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, make([]byte, 4096)...),
		make([]byte, 1<<20),
	} {
		conn, err := net.DialTimeout("tcp", string(m[1]), 5*time.Second)
		if err != nil {
			break // the helper may have gone with the job
		}
		conn.SetDeadline(time.Now().Add(time.Second))
		conn.Write(payload)
		buf := make([]byte, 256)
		conn.Read(buf)
		conn.Close()
	}
	if err := c.client.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	var j api.Job
	eventually(t, 60*time.Second, func() error {
		var err error
		if j, err = c.client.Job(context.Background(), id); err != nil {
			return err
		}
		if j.State != api.Cancelled && j.State != api.Failed {
			return fmt.Errorf("job %d is %s", id, j.State)
		}
		return nil
	})
	t.Logf("job after the hostile client: %s %s", j.State, j.Reason)
	c.waitGone(id)
	// The agents are alive and serve the next job.
	id = c.submit(api.JobSpec{Command: []string{check}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv})
	checkRanks(t, c, id, c.waitState(id, api.Completed, 60*time.Second))
}

// HPC Challenge (Debian's hpcc, built against Open MPI: HPL, DGEMM,
// STREAM, PTRANS, RandomAccess, FFT, latency and bandwidth), a real
// package no one here wrote, runs unmodified as a --mpi pmix job over two
// agents with a tiny input and passes its own checks.
func TestOpenMPIHPCC(t *testing.T) {
	lib, _ := pmixKit(t)
	hpcc, err := exec.LookPath("hpcc")
	if err != nil {
		t.Skip("no hpcc: apt-get install hpcc (.ci/run does)")
	}
	work := t.TempDir()
	// HPL of order 200 on a 1×2 grid; HPCC sizes its other kernels from it.
	in := `HPLinpack benchmark input file
cosched test
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
200          Ns
1            # of NBs
40           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
`
	if err := os.WriteFile(filepath.Join(work, "hpccinf.txt"), []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	c := pmixCluster(t, lib, clusterOpts{agents: 2, processors: 1, mode: sharing.Space})
	id := c.submit(api.JobSpec{Command: []string{hpcc}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv, Dir: work,
		TimeLimit: api.Duration{D: 3 * time.Minute}})
	j := c.waitState(id, api.Completed, 3*time.Minute)
	out, err := os.ReadFile(filepath.Join(work, "hpccoutf.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CommWorldProcs=2", "HPL_Tflops=", "End of HPC Challenge tests"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("hpccoutf.txt lacks %q", want)
		}
	}
	if strings.Contains(string(out), "FAILED") {
		t.Errorf("hpcc reports a failed check")
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "HPL_Tflops=") || strings.HasPrefix(line, "PTRANS_GBs=") || strings.HasPrefix(line, "MPIRandomAccess_GUPs=") {
			t.Logf("%s", line)
		}
	}
	t.Logf("job %d: %s in %v", id, j.State, j.Elapsed.D)
	c.waitGone(id)
}
