package node

import (
	"debug/elf"
	"fmt"
	"os"
	"strings"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/rank"
)

// singletonMPI says why a launch must be refused ("" if it need not): a
// job of several ranks whose program is linked against MPICH (its ELF
// DT_NEEDED names libmpich or libmpi) but gets neither PMI nor cosched's
// MPI library (--mpi none) would start each rank as an MPI singleton,
// alone, and wait in its first exchange until its time limit, printing
// nothing. A script or a program that loads MPI
// another way is not seen: it runs as asked.
func singletonMPI(l launch, dir string) string {
	if l.Bench != nil || l.Size < 2 || (l.MPI != "" && l.MPI != api.MPINone) || len(l.Argv) == 0 {
		return ""
	}
	path, err := rank.Resolve(l.Argv[0], dir)
	if err != nil {
		return "" // the start reports it
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return "" // a FIFO would block the launch: the start reports what is wrong
	}
	f, err := elf.Open(path)
	if err != nil {
		return "" // not ELF, or unreadable: the start says what it must
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return ""
	}
	for _, lib := range libs {
		if strings.HasPrefix(lib, "libmpich") || strings.HasPrefix(lib, "libmpi.so") {
			return fmt.Sprintf("%s is an MPI program (it needs %s) and the job has no PMI (--mpi none): each of its %d ranks would start alone and wait; submit it with --mpi pmi1 or --mpi cosched (docs/mpi.md)", l.Argv[0], lib, l.Size)
		}
	}
	return ""
}
