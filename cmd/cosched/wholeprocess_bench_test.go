package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/sharedtest"
)

// Whole-process timings: a command as a shell runs it, from exec to exit,
// against a baseline run alternately in the same benchmark. Wall time on
// a shared host is noisy; CPU time (user + system, from the kernel's
// accounting of the child) is steadier, so both are reported, as medians.
//
//	go test ./cmd/cosched -run '^$' -bench WholeProcess -benchtime 30x

// buildBinaries builds cosched and cosched-full beside it (without the
// race detector, cosched linked statically and profile-guided, as make
// build does) and a Go "hello, world" into a
// temporary directory.
func buildBinaries(b *testing.B) (cosched, hello string) {
	b.Helper()
	dir := b.TempDir()
	cosched, hello = filepath.Join(dir, "cosched"), filepath.Join(dir, "hello")
	light := exec.Command("go", "build", "-o", dir, ".")
	light.Env = append(os.Environ(), "CGO_ENABLED=0") // linked statically, as make build does
	if out, err := light.CombinedOutput(); err != nil {
		b.Fatalf("build cosched: %v\n%s", err, out)
	}
	if out, err := exec.Command("go", "build", "-o", dir, "../cosched-full").CombinedOutput(); err != nil {
		b.Fatalf("build cosched-full: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", hello, src).CombinedOutput(); err != nil {
		b.Fatalf("build hello: %v\n%s", err, out)
	}
	return cosched, hello
}

// runTimed runs argv to completion and returns its wall and CPU time.
func runTimed(b *testing.B, argv ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", argv, err, out)
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// compare runs base and subject alternately b.N times each and reports
// the medians of both and their ratios.
func compare(b *testing.B, baseName string, base []string, name string, subject []string) {
	compareRuns(b, baseName, func() (time.Duration, time.Duration) { return runTimed(b, base...) },
		name, func() (time.Duration, time.Duration) { return runTimed(b, subject...) })
}

// compareRuns is compare with runs other than a plain command's: each
// returns its wall and CPU time.
func compareRuns(b *testing.B, baseName string, base func() (wall, cpu time.Duration), name string, subject func() (wall, cpu time.Duration)) {
	var bw, bc, sw, sc []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first: neither always finds the caches warm.
		if i%2 == 0 {
			w, c := base()
			bw, bc = append(bw, w), append(bc, c)
		}
		w, c := subject()
		sw, sc = append(sw, w), append(sc, c)
		if i%2 == 1 {
			w, c := base()
			bw, bc = append(bw, w), append(bc, c)
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 { slices.Sort(d); return float64(d[len(d)/2]) / 1e6 }
	b.ReportMetric(med(bw), baseName+"-wall-ms")
	b.ReportMetric(med(bc), baseName+"-cpu-ms")
	b.ReportMetric(med(sw), name+"-wall-ms")
	b.ReportMetric(med(sc), name+"-cpu-ms")
	b.ReportMetric(med(sw)/med(bw), "wall-ratio")
	b.ReportMetric(med(sc)/med(bc), "cpu-ratio")
}

// BenchmarkWholeProcessVersion is `cosched --version` against a Go
// hello-world binary: the light binary (light) and the full one (full,
// which links what the single binary of before linked, so it is the
// figure before the split); with COSCHED_BASELINE naming another light
// binary (e.g. main's, built to /tmp), that one against this tree's too
// (vs-baseline: the ratios are this tree's over the baseline's).
func BenchmarkWholeProcessVersion(b *testing.B) {
	cosched, hello := buildBinaries(b)
	b.Run("light", func(b *testing.B) { compare(b, "hello", []string{hello}, "cosched", []string{cosched, "--version"}) })
	b.Run("full", func(b *testing.B) {
		compare(b, "hello", []string{hello}, "cosched-full", []string{fullBinary(cosched), "--version"})
	})
	if base := os.Getenv("COSCHED_BASELINE"); base != "" {
		b.Run("vs-baseline", func(b *testing.B) {
			compare(b, "baseline", []string{base, "--version"}, "cosched", []string{cosched, "--version"})
		})
	}
}

// BenchmarkWholeProcessClient is a client command that talks to no
// cluster, `cosched submit --help`, as BenchmarkWholeProcessVersion; and
// `cosched queue` with no cluster to ask (light-queue), which fails at
// once: a client command's start-up, flag parsing and look-up of the
// cluster record, without the network.
func BenchmarkWholeProcessClient(b *testing.B) {
	cosched, hello := buildBinaries(b)
	b.Run("light", func(b *testing.B) {
		compare(b, "hello", []string{hello}, "cosched", []string{cosched, "submit", "--help"})
	})
	b.Run("full", func(b *testing.B) {
		compare(b, "hello", []string{hello}, "cosched-full", []string{fullBinary(cosched), "submit", "--help"})
	})
	noCluster := noClusterQueue(b)
	b.Run("light-queue", func(b *testing.B) {
		compareRuns(b, "hello", func() (time.Duration, time.Duration) { return runTimed(b, hello) },
			"cosched", func() (time.Duration, time.Duration) { return noCluster(cosched) })
	})
	if base := os.Getenv("COSCHED_BASELINE"); base != "" {
		b.Run("vs-baseline", func(b *testing.B) {
			compare(b, "baseline", []string{base, "submit", "--help"}, "cosched", []string{cosched, "submit", "--help"})
		})
		b.Run("vs-baseline-queue", func(b *testing.B) {
			compareRuns(b, "baseline", func() (time.Duration, time.Duration) { return noCluster(base) },
				"cosched", func() (time.Duration, time.Duration) { return noCluster(cosched) })
		})
	}
}

// noClusterQueue returns a run of `cosched queue` (the binary given) where
// no cluster is recorded: an empty state directory as HOME and no
// COSCHED_ADDR. It must fail with "no cluster to talk to".
func noClusterQueue(b *testing.B) func(cosched string) (wall, cpu time.Duration) {
	home := b.TempDir()
	env := []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH")}
	return func(cosched string) (wall, cpu time.Duration) {
		cmd := exec.Command(cosched, "queue")
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall = time.Since(start)
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "no cluster to talk to") {
			b.Fatalf("%s queue without a cluster: %v\n%s", cosched, err, out)
		}
		return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
}

// BenchmarkWholeProcessSimVsPython is `cosched sim --trace KTH --policy
// easy` against bench/testdata/easy.py, a straightforward Python EASY, on
// the same trace: the ratios are Python's time over cosched's. The trace
// is ../shared's, or the file COSCHED_KTH names. It runs once for each
// interpreter it finds (pythons): builds of one Python version differ by
// 1.4× on this host, and the ratio is only as true as the interpreter
// named beside it.
func BenchmarkWholeProcessSimVsPython(b *testing.B) {
	interpreters := pythons()
	if len(interpreters) == 0 {
		b.Skip("python3 not installed")
	}
	trace := kthTrace(b)
	cosched, _ := buildBinaries(b)
	script, err := filepath.Abs("../../bench/testdata/easy.py")
	if err != nil {
		b.Fatal(err)
	}
	for _, py := range interpreters {
		b.Logf("%s: %s", py.name, py.path)
		b.Run(py.name, func(b *testing.B) {
			compare(b, "cosched", []string{cosched, "sim", "--trace", trace, "--policy", "easy"}, "python", []string{py.path, script, trace})
		})
	}
}

// python is an interpreter to time the Python EASY with.
type python struct{ name, path string }

// pythons are the distinct interpreters found: python3 on PATH (path),
// resolved to the interpreter itself, not a version manager's shim (pyenv's,
// a shell script running pyenv, which runs python, alone took twice the
// interpreter's time), and the distribution's /usr/bin/python3 (system)
// when it is another one (CI and a fresh machine have only that one).
func pythons() []python {
	var found []python
	seen := map[string]bool{}
	add := func(name, cmd string) {
		out, err := exec.Command(cmd, "-c", "import sys; print(sys.executable)").Output()
		exe := string(bytes.TrimSpace(out))
		if err != nil || exe == "" {
			return
		}
		real, err := filepath.EvalSymlinks(exe)
		if err != nil || seen[real] {
			return
		}
		seen[real] = true
		found = append(found, python{name, exe})
	}
	if p, err := exec.LookPath("python3"); err == nil {
		add("path", p)
	}
	add("system", "/usr/bin/python3")
	return found
}

// BenchmarkWholeProcessSimVsBaseline is the same cosched run against
// another cosched binary's, COSCHED_BASELINE (e.g. main's, built to /tmp):
// the ratios are the baseline's time over this tree's.
func BenchmarkWholeProcessSimVsBaseline(b *testing.B) {
	base := os.Getenv("COSCHED_BASELINE")
	if base == "" {
		b.Skip("COSCHED_BASELINE names no cosched binary to compare with")
	}
	trace := kthTrace(b)
	cosched, _ := buildBinaries(b)
	args := []string{"sim", "--trace", trace, "--policy", "easy"}
	compare(b, "cosched", append([]string{cosched}, args...), "baseline", append([]string{base}, args...))
}

// kthTrace is the KTH-SP2 trace: ../shared's, or the file COSCHED_KTH
// names (a worktree beside no ../shared).
func kthTrace(b *testing.B) string {
	if trace := os.Getenv("COSCHED_KTH"); trace != "" {
		return trace
	}
	return sharedtest.Path(b, "traces", "KTH-SP2-1996-2.swf")
}

// fullBinary is the full binary buildBinaries built beside cosched.
func fullBinary(cosched string) string { return filepath.Join(filepath.Dir(cosched), cli.FullName) }
