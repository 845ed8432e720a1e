package mpi_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// NetPIPE (Debian's netpipe-mpich2: NPmpich2, built by Debian against
// MPICH's libmpich.so.12, no line of it written here) runs unmodified on
// cosched's library between two ranks on two relays: its integrity check
// (every byte of every message size up to 4 MiB verified), then
// measurements with pre-posted receives and synchronous sends, and both
// directions at once, in immediate and bcs delivery. (Not -z: NetPIPE
// 3.7 means MPI_ANY_SOURCE by -1, which is MPI_PROC_NULL in MPICH's
// interface, so it fails under MPICH's own library too.)
func TestNetPIPE(t *testing.T) {
	needKit(t)
	np, err := exec.LookPath("NPmpich2")
	if err != nil {
		t.Skip("NPmpich2 not installed (apt-get install netpipe-mpich2)")
	}
	for _, mode := range []string{"immediate", "bcs"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			runs := [][]string{
				{"-i", "-u", "4194304"},
				{"-a", "-S", "-u", "65536", "-n", "3", "-p", "0"},
				{"-2", "-u", "65536", "-n", "3"},
			}
			if mode == "bcs" { // every round trip waits for slices: fewer sizes
				runs = [][]string{{"-i", "-u", "1048576"}, {"-a", "-S", "-2", "-u", "4096", "-n", "2"}}
			}
			for _, args := range runs {
				res := c.run(t, np, []int{0, 1}, 90*time.Second, append(args, "-o", "/dev/null")...)
				for _, r := range res {
					if r.exit != 0 || strings.Contains(r.out+r.err, "Integrity check failed") {
						t.Errorf("NPmpich2 %s: rank %d exit %d\n%s%s", strings.Join(args, " "), r.rank, r.exit, indent(r.out), indent(r.err))
					}
				}
				t.Logf("NPmpich2 %s: rank 0 said\n%s", strings.Join(args, " "), indent(lastLines(res[0].out, 4)))
			}
		})
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
