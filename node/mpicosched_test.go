package node_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// mpiWireArg makes the test binary a rank that speaks the relay's wire as
// cosched's MPI library does (TestMain): `node.test __mpi_wire RANK CODE
// MESSAGE`: every rank says hello and checks the protocol version; rank
// RANK then sends Abort{CODE, MESSAGE} and exits CODE, as the library's
// MPI_Abort does (MESSAGE "exit": it exits CODE without a word); the
// others wait to be killed.
const mpiWireArg = "__mpi_wire"

func mpiWireMain(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: __mpi_wire RANK CODE MESSAGE")
		return 2
	}
	aborter, _ := strconv.Atoi(args[0])
	code, _ := strconv.Atoi(args[1])
	me, _ := strconv.Atoi(os.Getenv("COSCHED_RANK"))
	size, _ := strconv.Atoi(os.Getenv("COSCHED_SIZE"))
	job, _ := strconv.ParseInt(os.Getenv("COSCHED_JOB"), 10, 64)
	c, err := net.Dial("unix", os.Getenv("COSCHED_RELAY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := frame.Write(c, comm.FrameHello, &comm.Hello{Job: job, Rank: me, Size: size, PID: os.Getpid()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fr := frame.NewReader(c, comm.MaxFrame)
	t, body, err := fr.Read()
	var w comm.Welcome
	if err == nil && t == comm.FrameWelcome {
		err = frame.Decode(body, &w)
	}
	if err != nil || t != comm.FrameWelcome || w.Version != comm.ProtocolVersion {
		fmt.Fprintf(os.Stderr, "welcome: type %d %+v %v\n", t, w, err)
		return 1
	}
	fmt.Println("welcome", w.Version, "LD_LIBRARY_PATH="+os.Getenv("LD_LIBRARY_PATH"), "PMI_FD="+os.Getenv("PMI_FD"))
	if me == aborter && args[2] == "exit" {
		return code // without Finalize
	}
	if me == aborter {
		if err := frame.Write(c, comm.FrameAbort, &comm.Abort{Code: code, Error: args[2]}); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		return code // at once, as the library does: the Abort may not be read yet
	}
	time.Sleep(2 * time.Minute)
	return 1
}

// fakeMPILib is a directory with a file named as cosched's MPI library:
// what the agent looks for (the real library comes from make build).
func fakeMPILib(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, node.MPILibName), []byte("not a library: the agent only looks for it"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// An agent without cosched's MPI library refuses --mpi cosched jobs at
// once, naming where it looked and how to build it; with it, the ranks
// get its directory first in LD_LIBRARY_PATH and no PMI.
func TestMPICoschedLibraryLookup(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "lib")
	c := startCluster(t, clusterOpts{agents: 2, processors: 1, mode: sharing.Space,
		configure: func(cfg *node.Config) { cfg.MPILib = lib }})
	show := []string{"sh", "-c", `echo "lib=$LD_LIBRARY_PATH pmi=${PMI_FD-none}"`}
	id := c.submit(api.JobSpec{Command: show, Processors: 2, MPI: api.MPICosched})
	j := c.waitState(id, api.Failed, 30*time.Second)
	for _, want := range []string{"has no MPI library of cosched", "make build", "--mpi-lib DIR", "looked for libmpich.so.12 in " + lib + " (--mpi-lib): no such file"} {
		if !strings.Contains(j.Reason, want) {
			t.Errorf("reason %q, want %q", j.Reason, want)
		}
	}
	t.Logf("reason: %s", j.Reason)
	for _, r := range j.Ranks {
		if r.PID != 0 {
			t.Errorf("rank %d started (pid %d)", r.Rank, r.PID)
		}
	}

	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, node.MPILibName), []byte("fake"), 0o644); err != nil {
		t.Fatal(err)
	}
	id = c.submit(api.JobSpec{Command: show, Processors: 2, MPI: api.MPICosched, Env: []string{"LD_LIBRARY_PATH=/opt/x"}})
	j = c.waitState(id, api.Completed, 30*time.Second)
	for _, r := range j.Ranks {
		if out, want := c.rankOutput(id, r.Rank), "lib="+lib+":/opt/x pmi=none"; !strings.Contains(out, want) {
			t.Errorf("rank %d said %q, want %q", r.Rank, out, want)
		}
	}
}

// MPI_Abort from a rank of cosched's MPI library fails the job with the
// rank, its node, the exit code and the message, whichever rank's end
// reaches the controller first, and kills the other ranks; a call the
// library does not support fails it with the call's name; a rank that
// exits 0 without MPI_Finalize fails it too.
func TestMPICoschedAbort(t *testing.T) {
	lib := fakeMPILib(t)
	c := startCluster(t, clusterOpts{agents: 2, processors: 2, mode: sharing.Space,
		configure: func(cfg *node.Config) { cfg.MPILib = lib }})
	for _, tc := range []struct {
		rank, code int
		msg, want  string
	}{
		{2, 3, "the input is bad", "rank 2 on %s called MPI_Abort (exit code 3): the input is bad"},
		{1, 1, "MPI_Win_create_dynamic is not supported by cosched's MPI", "rank 1 on %s: MPI_Win_create_dynamic is not supported by cosched's MPI"},
		{0, 0, "", "rank 0 on %s called MPI_Abort (exit code 0)"},
		{3, 0, "exit", "rank 3 on %s ended after MPI_Init without MPI_Finalize"},
	} {
		cmd := []string{os.Args[0], mpiWireArg, strconv.Itoa(tc.rank), strconv.Itoa(tc.code), tc.msg}
		id := c.submit(api.JobSpec{Command: cmd, Processors: 4, MPI: api.MPICosched})
		j := c.waitState(id, api.Failed, 30*time.Second)
		if want := fmt.Sprintf(tc.want, j.Ranks[tc.rank].Node); j.Reason != want {
			t.Errorf("reason %q, want %q", j.Reason, want)
		}
		c.waitGone(id)
		// The aborting rank was welcomed (the others may be killed
		// before they are).
		if out := c.rankOutput(id, tc.rank); !strings.Contains(out, fmt.Sprintf("welcome %d LD_LIBRARY_PATH=%s", comm.ProtocolVersion, lib)) || !strings.Contains(out, "PMI_FD=\n") {
			t.Errorf("rank %d said %q", tc.rank, out)
		}
	}
}
