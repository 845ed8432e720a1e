package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/mpi/mpibuild"
)

// mpiWorkloadKit builds cosched's MPI library into dir/lib and compiles
// mpi/testdata/workload's two programs with MPICH's mpicc into dir, or
// skips saying what is missing (CI installs mpich and libmpich-dev).
func mpiWorkloadKit(t *testing.T, dir string) (lib string, progs map[string]string) {
	t.Helper()
	for _, tool := range []string{"gcc", "mpicc.mpich"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (apt-get install mpich libmpich-dev)", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lib = filepath.Join(dir, "lib")
	if err := mpibuild.BuildLib(ctx, lib); errors.Is(err, mpibuild.ErrUnavailable) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	root, err := mpibuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	progs = map[string]string{}
	for _, name := range []string{"blocking", "nonblocking"} {
		exe := filepath.Join(dir, name)
		src := filepath.Join(root, "mpi", "testdata", "workload", name+".c")
		if b, err := exec.CommandContext(ctx, "mpicc.mpich", "-O2", "-o", exe, src).CombinedOutput(); err != nil {
			t.Fatalf("mpicc.mpich %s: %v\n%s", src, err, b)
		}
		progs[name] = exe
	}
	return lib, progs
}

// `cosched bench run --mpi-programs` end to end on two real MPI programs
// (one of them twice) on 2 agents, under bcs at a slice of its own (one
// mode: every rank start costs, on a loaded host): each program is
// calibrated alone, every job of every mode
// completes, and the report has each program's model and every mode's
// measured and simulated figures. Bad input fails first, naming the
// file, line and field.
func TestBenchRunMPIPrograms(t *testing.T) {
	dir := t.TempDir()
	lib, _ := mpiWorkloadKit(t, dir)
	file := filepath.Join(dir, "progs.toml")
	os.WriteFile(file, []byte(`# the workload: 3 jobs
[[program]]
path = "blocking"
args = ["4000", "2000", "25"]
ranks = 2

[[program]]
name = "nb"
path = "nonblocking"
args = ["8000", "4000", "12"]
ranks = 2
weight = 2
`), 0o644)
	run := func(args ...string) (string, error) {
		b, err := coschedCmd(append([]string{"bench", "run", "--realtime-priority", "0"}, args...)...).CombinedOutput()
		return string(b), err
	}

	// Bad input: a clear error, no cluster started.
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[program]]\npath = \"/bin/true\"\nranks = 2\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mpi-programs", filepath.Join(dir, "absent.toml")}, "--mpi-programs: open " + filepath.Join(dir, "absent.toml")},
		{[]string{"--mpi-programs", bad}, bad + ":2: path: /bin/true: is not an MPICH program"},
		{[]string{"--mpi-programs", file, "--jobs", "3"}, "--jobs: not with --mpi-programs"},
		{[]string{"--mpi-programs", file, "--nodes", "1"}, "--mpi-programs: " + file + ":2: ranks: blocking has 2 ranks, more than the 1 processors"},
		{[]string{"--mpi-programs", file, "--nodes", "2", "--mpi-lib", dir, "--out", filepath.Join(dir, "x")}, "cosched's MPI library is not in " + dir},
		{[]string{"--mode", "bcs:soon"}, `--mode "bcs:soon"`},
	} {
		out, err := run(c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: %v\n%s\nwant %q", c.args, err, out, c.want)
		}
	}

	out := filepath.Join(dir, "results")
	text, err := run("--mpi-programs", file, "--mpi-lib", lib, "--nodes", "2", "--mode", "bcs:5ms", "--mpl", "2", "--out", out)
	if err != nil {
		t.Fatalf("bench run: %v\n%s", err, text)
	}
	for _, w := range []string{"[calibrate] blocking on 2 ranks:", "[calibrate] nb on 2 ranks:", "[bcs-5ms 1/1]", "\nverdict: "} {
		if !strings.Contains(text, w) {
			t.Fatalf("output lacks %q:\n%s", w, text)
		}
	}
	agentsGone(t, out)
	res := readBenchRun(t, out)
	rb, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(rb)
	if res.Jobs != 3 || len(res.Modes) != 1 || res.Modes[0].Mode != "bcs" {
		t.Fatalf("jobs %d, modes %+v", res.Jobs, res.Modes)
	}
	for i, name := range []string{"bcs-5ms"} {
		m := res.Modes[i]
		s := m.Summary
		if m.Error != "" || s.Jobs != 3 || s.Completed != 3 || !(s.ProcessorUtil > 0) { // from the calibrated compute: a faster run than the calibration passes 1
			t.Fatalf("%s: %+v (error %q)", name, s, m.Error)
		}
		if sim := m.Simulated; sim == nil || sim.Mode != m.Mode || sim.Simulated != 3 || !(sim.MeanResponse > 0) {
			t.Fatalf("%s: simulated %+v", name, sim)
		}
		want := fmt.Sprintf("| %s | mean response | %.2f s | %.2f s |", name, s.Metrics.Response.Mean, m.Simulated.MeanResponse)
		if !strings.Contains(report, want) {
			t.Fatalf("report.md lacks %q:\n%s", want, report)
		}
		f, err := os.Open(filepath.Join(out, name, "jobs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) != 4 {
			t.Fatalf("%s jobs.csv: %d rows, %v", name, len(rows), err)
		}
	}
	for _, w := range []string{"# cosched bench run: 3 jobs of 2 MPI programs", "## The MPI programs and their models",
		"| blocking | 2 | 1 |", "| nb | 2 | 2 |", ",news,B × ", ",news,NB × ", "(measured_vs_simulated.png)"} {
		if !strings.Contains(report, w) {
			t.Errorf("report.md lacks %q:\n%s", w, report)
		}
	}
}
