package mpi_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
)

// Bad arguments return MPI's error classes under ERRORS_RETURN, and the
// library goes on working; under ERRORS_ARE_FATAL the rank fails with
// the call and the class. A bad COSCHED_RELAY_GRACE fails MPI_Init,
// naming it.
func TestBadInput(t *testing.T) {
	prog := program(t, "mpi/testdata/conformance/badinput.c")
	c := newCluster(t, 1, false)
	expectPass(t, "badinput.c on 3 ranks", c.run(t, prog, []int{0, 0, 0}, 30*time.Second))
	for _, r := range c.run(t, prog, []int{0, 0}, 30*time.Second, "fatal") {
		if r.exit != 1 || !strings.Contains(r.err, "MPI_Send: invalid communicator (MPI_ERR_COMM)") || strings.Contains(r.out, "FAIL") {
			t.Errorf("rank %d with a forged communicator under ERRORS_ARE_FATAL: exit %d, stdout %q, stderr %q", r.rank, r.exit, r.out, r.err)
		}
	}
	// a relay grace that is not a duration: named, exit 1, before any frame
	c.env = []string{"COSCHED_RELAY_GRACE=5 minutes"}
	for _, r := range c.run(t, prog, []int{0}, 30*time.Second) {
		if want := "COSCHED_RELAY_GRACE=5 minutes is not a duration >= 0 (like 5m or 1m30s)"; r.exit != 1 || !strings.Contains(r.err, want) {
			t.Errorf("a bad relay grace: exit %d, stderr %q, want 1 and %q", r.exit, r.err, want)
		}
	}
}

// A call outside the subset ends the rank with exit 1 and the call's
// name, whichever name it was called by; MPI_Abort with its code.
func TestUnsupportedCallFailsNamingIt(t *testing.T) {
	prog := program(t, "mpi/testdata/conformance/unsupported.c")
	c := newCluster(t, 1, false)
	for _, tc := range []struct {
		arg, want string
		exit      int
	}{
		{"win", "MPI_Win_create_dynamic is not supported by cosched's MPI", 1},
		{"pmpi", "MPI_Win_create_dynamic is not supported by cosched's MPI", 1},
		{"spawn", "MPI_Comm_spawn is not supported by cosched's MPI", 1},
		{"preinit", "MPI_Session_init is not supported by cosched's MPI", 1},
		{"abort", "application called MPI_Abort(comm=0x44000000, 7)", 7},
		// each rank's own window (MPI_COMM_SELF), past its end: the
		// target checks every operation against its window
		{"winout", "reaches outside rank 0's window (displacement 0, 32 bytes, window of 16)", 1},
		{"winout-fence", "reaches outside rank 0's window (displacement 3, 8 bytes, window of 16)", 1},
	} {
		c.blockedMu.Lock()
		c.aborts = nil
		c.blockedMu.Unlock()
		for _, r := range c.run(t, prog, []int{0, 0}, 30*time.Second, tc.arg) {
			if r.exit != tc.exit || !strings.Contains(r.err, tc.want) || strings.Contains(r.out, "FAIL") {
				t.Errorf("%s: rank %d: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.arg, r.rank, r.exit, tc.exit, r.out, r.err, tc.want)
			}
		}
		// the relay heard it (before MPI_Init there is no relay to tell);
		// its reader may still be on the way to the frame the rank wrote
		// just before it exited
		want := 2
		if tc.arg == "preinit" {
			want = 0
		}
		var aborts []comm.Abort
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			c.blockedMu.Lock()
			aborts = slices.Clone(c.aborts)
			c.blockedMu.Unlock()
			if len(aborts) >= want || time.Now().After(deadline) {
				break
			}
		}
		if len(aborts) != want {
			t.Errorf("%s: the relay got %d Aborts, want %d: %v", tc.arg, len(aborts), want, aborts)
		}
		for _, a := range aborts {
			if a.Code != tc.exit || !strings.Contains(a.Error, tc.want) {
				t.Errorf("%s: the relay got Abort %+v, want code %d and %q", tc.arg, a, tc.exit, tc.want)
			}
		}
	}
}

// A relay that goes away (its agent died) ends its ranks with a reason
// and exit 1: the one waiting in MPI_Recv at once, the one that writes
// next on its write (no SIGPIPE death, no hang).
func TestRelayGoneEndsRanks(t *testing.T) {
	prog := program(t, "mpi/testdata/blocking.c")
	c := newCluster(t, 1, false)
	c.started = func(rank, pid int) {
		if rank == 1 {
			go func() {
				time.Sleep(300 * time.Millisecond) // rank 1 waits in MPI_Recv, rank 0 sleeps
				c.relays[0].Close()
			}()
		}
	}
	for _, r := range c.run(t, prog, []int{0, 0}, 30*time.Second, "1000") {
		t.Logf("rank %d: %s", r.rank, strings.TrimSpace(r.err))
		if r.exit != 1 || !strings.Contains(r.err, "cosched MPI: rank") || !strings.Contains(r.err, "relay") {
			t.Errorf("rank %d after its relay closed: exit %d, stderr %q", r.rank, r.exit, r.err)
		}
	}
}
