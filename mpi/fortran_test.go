package mpi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cosched/cosched/mpi/mpibuild"
)

// TestFortran runs Fortran programs (compiled by MPICH's own mpif90 and
// linked against MPICH's libmpichfort.so.12, which calls the C interface)
// unmodified on cosched's library: in immediate delivery on 1, 2 and 4
// ranks over two relays, and under bcs on 3. fortran.f90 (`use mpi`)
// checks what Fortran codes use most: the Fortran datatypes and
// operations, the status array and MPI_STATUS_IGNORE, the predefined
// attributes read as Fortran integers, a user attribute with Fortran copy
// and delete callbacks, MPI_IN_PLACE, derived types, a window's Put
// between fences, and MPI-IO in the directory it is given; fortran08.f90
// the Fortran 2008 interface (`use mpi_f08`), an array section included;
// fortran77.f FORTRAN 77's `include 'mpif.h'`.
func TestFortran(t *testing.T) {
	needKit(t)
	if err := mpibuild.CheckFortran(); err != nil {
		t.Skip(err)
	}
	progs := []struct{ name, path string }{{name: "fortran.f90"}, {name: "fortran08.f90"}, {name: "fortran77.f"}}
	for i := range progs {
		progs[i].path = program(t, "mpi/testdata/conformance/"+progs[i].name)
	}
	for _, mode := range []string{"immediate", "bcs"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			sizes := []int{1, 2, 4}
			if mode == "bcs" {
				sizes = []int{3}
			}
			for _, p := range progs {
				for _, n := range sizes {
					t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
						res := c.run(t, p.path, spread(n, 2), 60*time.Second, t.TempDir())
						expectPass(t, fmt.Sprintf("%s on %d ranks", p.name, n), res)
					})
				}
			}
		})
	}
}
