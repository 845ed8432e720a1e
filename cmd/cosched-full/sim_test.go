package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss"
)

// cosched runs the command in-process and returns its exit status and output.
func cosched(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// A small trace (8 processors) with one job that is too wide.
const smallTrace = `; MaxProcs: 8
1 0 -1 100 8 -1 -1 8 100 -1 1 1 1 -1 -1 -1 -1 -1
2 10 -1 50 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1
3 20 -1 30 4 -1 -1 4 30 -1 1 1 1 -1 -1 -1 -1 -1
4 30 -1 10 2 -1 -1 2 10 -1 1 2 1 -1 -1 -1 -1 -1
5 40 -1 10 16 -1 -1 16 10 -1 1 2 1 -1 -1 -1 -1 -1
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimDefaultRunsEmbeddedSample(t *testing.T) {
	code, out, errOut := cosched(t, "", "sim")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"KTH-SP2 first 5,000 jobs", "100 processors (from MaxProcs)", "5,000 simulated", "fcfs", "easy", "easy-sjbf", "conservative", "bounded slowdown"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimJSONOnATrace(t *testing.T) {
	path := writeFile(t, "small.swf", smallTrace)
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []jss.TraceResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res) != 1 || res[0].Policy != "easy" || res[0].Metrics.Jobs != 4 || res[0].Jobs.Dropped.TooWide != 1 {
		t.Fatalf("result %+v", res)
	}
	// Waits 0, 90, 80, 100 (worked out in jss's output test).
	if res[0].Metrics.Wait.Mean != 67.5 {
		t.Errorf("mean wait %v, want 67.5", res[0].Metrics.Wait.Mean)
	}
}

func TestSimCSVOneRowPerPolicy(t *testing.T) {
	path := writeFile(t, "small.swf", smallTrace)
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "fcfs,conservative,fcfs", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1][0] != "fcfs" || rows[2][0] != "conservative" {
		t.Fatalf("rows %v (repeats are dropped, order kept)", rows)
	}
}

func TestSimGzipAndStdin(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(smallTrace))
	zw.Close()
	path := writeFile(t, "small.swf.gz", gz.String())
	code, out, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--format", "csv")
	if code != 0 || !strings.Contains(out, "easy,") {
		t.Fatalf("gzip: exit %d: %s%s", code, out, errOut)
	}
	code, out2, errOut := cosched(t, gz.String(), "sim", "--trace", "-", "--policy", "easy", "--format", "csv")
	if code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, errOut)
	}
	// Same numbers whichever way the trace came in (the trace column differs).
	cut := func(s string) string { return strings.Join(strings.Split(strings.Split(s, "\n")[1], ",")[2:], ",") }
	if cut(out) != cut(out2) {
		t.Errorf("gzip file and stdin differ:\n%s\n%s", out, out2)
	}
}

func TestSimWritesSchedulePerPolicy(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, "small.swf", smallTrace)
	code, _, errOut := cosched(t, "", "sim", "--trace", path, "--policy", "easy,fcfs",
		"--out-swf", filepath.Join(dir, "out.swf"), "--jobs-csv", filepath.Join(dir, "jobs.csv"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"out.easy.swf", "out.fcfs.swf", "jobs.easy.csv", "jobs.fcfs.csv"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(data), "\n"); lines < 5 {
			t.Errorf("%s has %d lines:\n%s", name, lines, data)
		}
	}
	code, _, errOut = cosched(t, "", "sim", "--trace", path, "--policy", "easy", "--jobs-csv", filepath.Join(dir, "one.csv"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "one.csv")); err != nil {
		t.Errorf("single policy keeps the name as given: %v", err)
	}
}

func TestSimBadInput(t *testing.T) {
	malformed := writeFile(t, "bad.swf", "; MaxProcs: 8\n1 0 -1 100 8 -1 -1 8 100 -1 1 1 1 -1 -1 -1 -1 -1\n2 10 -1 5O 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n")
	noSize := writeFile(t, "nosize.swf", "1 0 -1 100 8 -1 -1 8 100 -1 1 1 1 -1 -1 -1 -1 -1\n")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown policy", []string{"sim", "--policy", "easy,lifo"}, 2,
			[]string{`unknown policy "lifo"`, "fcfs, easy, easy-sjbf, conservative"}},
		{"every bad flag at once", []string{"sim", "--procs", "-1", "--tau", "0s", "--format", "xml", "--overrun", "maybe"}, 2,
			[]string{"--procs -1", "--tau 0s", `--format "xml"`, `--overrun "maybe"`}},
		{"unknown flag", []string{"sim", "--bogus"}, 2, []string{"unknown flag: --bogus"}},
		{"malformed line", []string{"sim", "--trace", malformed, "--policy", "easy", "--out-swf", filepath.Join(dir, "never.swf")}, 1,
			[]string{"bad.swf:3: field 4 (run time)", `"5O"`}},
		{"missing file", []string{"sim", "--trace", filepath.Join(dir, "absent.swf")}, 1, []string{"absent.swf", "no such file"}},
		{"directory", []string{"sim", "--trace", dir}, 1, []string{"is a directory"}},
		{"no machine size", []string{"sim", "--trace", noSize, "--policy", "easy"}, 1, []string{"pass --procs"}},
		{"stray argument", []string{"sim", "extra"}, 2, []string{"unknown command"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := cosched(t, "", c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, c.code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q: %s", w, errOut)
				}
			}
		})
	}
	// The failed run left no partial schedule behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left after a failed run: %v", entries)
	}
	// --lenient skips the malformed line, counts it and reports it.
	code, out, errOut := cosched(t, "", "sim", "--trace", malformed, "--policy", "easy", "--lenient")
	if code != 0 {
		t.Fatalf("lenient: exit %d: %s", code, errOut)
	}
	for _, w := range []string{"1 dropped", "1 malformed lines", "bad.swf:3: field 4 (run time)"} {
		if !strings.Contains(out, w) {
			t.Errorf("lenient report lacks %q:\n%s", w, out)
		}
	}
}

// The real traces, when the workplace's shared data is present.
func TestSimRealTraces(t *testing.T) {
	nasa := sharedtest.Path(t, "traces", "NASA-iPSC-1993-3.1-cln.swf.gz")
	code, out, errOut := cosched(t, "", "sim", "--trace", nasa, "--policy", "easy", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []jss.TraceResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res[0].Processors != 128 || res[0].Jobs.Read != 18239 || res[0].Metrics.Jobs+int(res[0].Jobs.Dropped.Total()) != 18239 {
		t.Errorf("NASA: %+v", res[0].Jobs)
	}
	llnl := sharedtest.Path(t, "traces", "LLNL-Atlas-2006-2.1-cln.swf")
	code, out, errOut = cosched(t, "", "sim", "--trace", llnl, "--policy", "easy", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// Atlas logs cancelled-before-start jobs with no processors: dropped, counted.
	if r := res[0]; r.Processors != 9216 || r.Jobs.Dropped.NoProcessors == 0 || int64(r.Metrics.Jobs)+r.Jobs.Dropped.Total() != r.Jobs.Read {
		t.Errorf("LLNL: %+v", r.Jobs)
	}
}

// TestBinaryExitCodes builds the real binary and checks what a shell sees.
func TestBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "cosched")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "sim", "--policy", "easy", "--format", "csv").Output()
	if err != nil || !strings.HasPrefix(string(out), "policy,trace,") {
		t.Fatalf("default run: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "sim", "--policy", "nope")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("unknown policy: %v", err)
	}
	if !strings.Contains(stderr.String(), "valid: fcfs, easy, easy-sjbf, conservative") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
