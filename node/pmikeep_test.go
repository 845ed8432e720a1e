package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/proctest"
)

// submitMPI submits a 2-rank --mpi pmi job to a kept cluster.
func (k *keptCluster) submitMPI(cmd []string) int64 {
	k.t.Helper()
	id, err := k.client().Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: 2 * time.Minute}, Command: cmd, MPI: api.MPIPMI1})
	if err != nil {
		k.t.Fatal(err)
	}
	return id
}

// checkStepsRun checks the output of a rank of steps.c: one start, 1…n
// in order, and "finalized" (MPI_Finalize returned).
func checkStepsRun(t *testing.T, path string, n int) {
	t.Helper()
	checkCountedRun(t, path, n, "finalized")
}

// waitCompleted waits for job id to end and fails the test at once if it
// ended otherwise than COMPLETED.
func (k *keptCluster) waitCompleted(t *testing.T, id int64) api.Job {
	t.Helper()
	j := waitJob(t, k.client(), id, 60*time.Second, func(j api.Job) error {
		if !j.State.Done() {
			return fmt.Errorf("job %d is %s", j.ID, j.State)
		}
		return nil
	})
	if j.State != api.Completed {
		t.Fatalf("job %d is %s (%s), want COMPLETED", j.ID, j.State, j.Reason)
	}
	return j
}

// restartAgent kills agent p with SIGKILL, checks that its rank's keeper
// outlived it, and starts it again, joining other.
func (k *keptCluster) restartAgent(t *testing.T, p, other *agentProc, keeper int) {
	t.Helper()
	p.kill9(t)
	if !alive(keeper) {
		t.Fatalf("the keeper of %s's rank (pid %d) died with its agent", p.name, keeper)
	}
	p.args = append(p.args, "--join", other.ready.Gossip)
	p.start(t, k.dir)
}

// An MPICH job (PMI-1, MPICH's own transport between its ranks) runs on
// while first the compute agent and then the controller's agent are
// killed with SIGKILL and started again: each rank runs once, without a
// restart, its keeper carries its PMI connection over to the agent's next
// life, and MPI_Finalize (PMI's finalize, after the restarts) works: the
// job completes.
func TestMPIJobOutlivesItsAgents(t *testing.T) {
	prog := mpiProgram(t, "steps")
	k := startKeptCluster(t, time.Minute)
	const n = 40
	id := k.submitMPI([]string{prog, strconv.Itoa(n)})
	j := waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	keepers := map[string]int{"c0": k.keeperOf("c0", id), "w1": k.keeperOf("w1", id)}
	before := sorted([]int{keepers["c0"], keepers["w1"]})
	for _, step := range []struct{ p, other *agentProc }{{k.w1, k.c0}, {k.c0, k.w1}} {
		out := k.outOf(step.p.name, id, rankOn(t, j, step.p.name))
		b, _ := os.ReadFile(out)
		waitLines(t, out, strings.Count(string(b), "\n")+3) // running, well past MPI_Init
		k.restartAgent(t, step.p, step.other, keepers[step.p.name])
		b, _ = os.ReadFile(out)
		waitLines(t, out, strings.Count(string(b), "\n")+1)
	}
	j = k.waitCompleted(t, id)
	if got := sorted(rankPIDs(j)); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("rank pids %v at the end, %v at the start: restarted", got, before)
	}
	for i, r := range j.Ranks {
		checkStepsRun(t, k.outOf(r.Node, id, i), n)
	}
	eventually(t, 10*time.Second, func() error { // the job's records go with it
		for _, name := range []string{"c0", "w1"} {
			if left, _ := filepath.Glob(filepath.Join(k.dir, name, "jobs", strconv.FormatInt(id, 10), "*.msgpack")); len(left) > 0 {
				return fmt.Errorf("records left after the job: %v", left)
			}
		}
		return nil
	})
}

// The compute agent killed while its rank waits in MPI_Init's PMI barrier
// (its peer has not entered MPI_Init yet): the rank's keeper replays its
// PMI commands since its last barrier into the agent's next life, the
// barrier ends once the peer enters it, and the job completes.
func TestMPIJobOutlivesItsAgentInPMIBarrier(t *testing.T) {
	prog := mpiProgram(t, "steps")
	k := startKeptCluster(t, time.Minute)
	gate := filepath.Join(k.dir, "go")
	const n = 5
	// c0's rank enters MPI_Init only once the gate exists.
	script := fmt.Sprintf(`if [ "$COSCHED_NODE" = c0 ]; then while [ ! -e %s ]; do sleep 0.05; done; fi; exec "$0" %d`, gate, n)
	id := k.submitMPI([]string{"sh", "-c", script, prog})
	j := waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	keeper := k.keeperOf("w1", id)
	// w1's rank is in the barrier when it has sat in read(2) on its PMI
	// descriptor (3) for a while: MPI_Init's other PMI calls are answered
	// at once, and its peer cannot answer before the gate opens.
	var since time.Time
	eventually(t, 20*time.Second, func() error {
		p := childOf(t, k.dir, keeper)
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", p))
		if f := strings.Fields(string(b)); len(f) < 2 || f[0] != "0" || f[1] != "0x3" {
			since = time.Time{}
			return fmt.Errorf("w1's rank (pid %d) not reading its PMI socket: %q", p, b)
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) < 500*time.Millisecond {
			return fmt.Errorf("w1's rank in read(3) for %v only", time.Since(since))
		}
		return nil
	})
	k.restartAgent(t, k.w1, k.c0, keeper)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = k.waitCompleted(t, id)
	for i, r := range j.Ranks {
		checkStepsRun(t, k.outOf(r.Node, id, i), n)
	}
	log, _ := os.ReadFile(filepath.Join(k.dir, "w1.log"))
	if want := fmt.Sprintf("job %d rank %d resumed through its keeper at barrier 0", id, rankOn(t, j, "w1")); !strings.Contains(string(log), want) {
		t.Errorf("w1's log does not say %q", want)
	}
}

// A kept rank that speaks garbage on its PMI socket (through its keeper)
// ends its job with the reason, as one that is not kept does.
func TestKeptPMIBadInputFailsJob(t *testing.T) {
	k := startKeptCluster(t, time.Minute)
	for _, tc := range []struct{ script, reason string }{
		{`echo "cmd=init pmi_version=1 pmi_subversion=1" >&3; echo "no equals sign" >&3; sleep 60`, "malformed PMI command"},
		{`printf 'cmd=barrier_in\ncmd=barrier_in\n' >&3; sleep 60`, "entered PMI barrier 0 twice"},
		{`head -c 5000 /dev/zero | tr '\0' x >&3; sleep 60`, "longer than"},
	} {
		id := k.submitMPI([]string{"sh", "-c", tc.script})
		j := waitJob(t, k.client(), id, 30*time.Second, inState(api.Failed))
		if !strings.Contains(j.Reason, tc.reason) {
			t.Errorf("%s: reason %q, want %q", tc.script, j.Reason, tc.reason)
		}
	}
}

// childOf is the program a keeper runs: its child among the cluster's
// rank processes.
func childOf(t *testing.T, dir string, keeper int) int {
	t.Helper()
	ranks, err := proctest.Ranks(proctest.OutputUnder(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranks {
		if r.PPID == keeper {
			return r.PID
		}
	}
	return -1
}
