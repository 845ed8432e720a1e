package mpi_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosched/cosched/mpi/mpibuild"
)

// The built library exports every function and data object of MPICH's
// libmpich.so.12 (abi/mpich-4.txt): no program linked against MPICH
// fails to load on it for want of a symbol.
func TestEveryMPICHSymbolIsExported(t *testing.T) {
	k := needKit(t)
	out, err := exec.Command("nm", "-D", "--defined-only", filepath.Join(k.LibDir, "libmpich.so.12")).Output()
	if err != nil {
		t.Fatalf("nm: %v", err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			have[f[2]] = true
		}
	}
	root, err := mpibuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "mpi", "abi", "mpich-4.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		n++
		if !have[fields[1]] {
			t.Errorf("%s (%s) is not exported", fields[1], fields[0])
		}
	}
	if n < 1000 {
		t.Errorf("abi/mpich-4.txt lists %d symbols: not MPICH's interface", n)
	}
	// and nothing of the library's own leaks out
	for name := range have {
		if !strings.HasPrefix(name, "MPI") && !strings.HasPrefix(name, "PMPI") && !strings.HasPrefix(name, "QMPI") {
			t.Errorf("the library exports %s", name)
		}
	}
}
