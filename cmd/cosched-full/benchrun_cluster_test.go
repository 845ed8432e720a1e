package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchRunResults is what the tests read of results.json.
type benchRunResults struct {
	Jobs  int `json:"jobs"`
	Modes []struct {
		Mode    string `json:"mode"`
		Error   string `json:"error"`
		Summary struct {
			Jobs          int     `json:"jobs"`
			Completed     int     `json:"completed"`
			ProcessorUtil float64 `json:"processor_util"`
			Metrics       struct {
				Response struct {
					Mean float64 `json:"mean"`
				} `json:"response_s"`
			} `json:"metrics"`
		} `json:"summary"`
		Nodes struct {
			SlotReuses uint64 `json:"slot_reuses"`
		} `json:"nodes"`
		Simulated *struct {
			Mode         string  `json:"mode"`
			Simulated    int     `json:"simulated"`
			MeanResponse float64 `json:"mean_response"`
		} `json:"simulated"`
	} `json:"modes"`
}

func readBenchRun(t *testing.T, dir string) benchRunResults {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r benchRunResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// agentsGone fails if an agent of the run's clusters is still alive.
func agentsGone(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "state", "cluster.json"))
	if len(files) == 0 {
		t.Fatal("no cluster record was written")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Agents []struct{ PID int } `json:"agents"`
		}
		json.Unmarshal(b, &rec)
		for _, a := range rec.Agents {
			if agentAlive(a.PID) {
				t.Errorf("agent pid %d of %s still alive", a.PID, f)
			}
		}
	}
}

// `cosched bench run` end to end on a tiny workload: every job of every
// mode completes, the table's numbers are those of the per-job records,
// and no agent is left.
func TestBenchRunEndToEnd(t *testing.T) {
	// A relative --out, as make demo gives: the ranks, in their own
	// working directories, must still find their relays.
	cwd := t.TempDir()
	out := filepath.Join(cwd, "results")
	cmd := coschedCmd("bench", "run", "--jobs", "4", "--mean-runtime", "400ms", "--mode", "bcs,space",
		"--nodes", "2", "--slice", "20ms", "--mpl", "2", "--work", "wall", "--realtime-priority", "0", "--out", "results")
	cmd.Dir = cwd
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench run: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "mean response") || !strings.Contains(string(b), "\nverdict: ") || !strings.Contains(string(b), "[bcs 1/2]") {
		t.Fatalf("output:\n%s", b)
	}
	agentsGone(t, out)
	res := readBenchRun(t, out)
	rb, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(rb)
	if _, after, _ := strings.Cut(report, "\n\n"); !strings.HasPrefix(after, "**Verdict:**") {
		t.Errorf("report.md does not open with the verdict:\n%s", report)
	}
	if len(res.Modes) != 2 || res.Modes[0].Mode != "bcs" || res.Modes[1].Mode != "space" {
		t.Fatalf("modes %+v", res.Modes)
	}
	for _, m := range res.Modes {
		s := m.Summary
		if m.Error != "" || s.Jobs != 4 || s.Completed != 4 || !(s.ProcessorUtil > 0 && s.ProcessorUtil <= 1.05) {
			t.Fatalf("%s: %+v (error %q)", m.Mode, s, m.Error)
		}
		// The same four jobs were simulated under the mode's model.
		wantSim := map[string]string{"bcs": "bcs", "space": "space"}[m.Mode]
		if sim := m.Simulated; sim == nil || sim.Mode != wantSim || sim.Simulated != 4 || !(sim.MeanResponse > 0) {
			t.Fatalf("%s: simulated %+v", m.Mode, sim)
		}
		// The mean response is that of the per-job records.
		f, err := os.Open(filepath.Join(out, m.Mode, "jobs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(bufio.NewReader(f)).ReadAll()
		f.Close()
		if err != nil || len(rows) != 5 {
			t.Fatalf("%s jobs.csv: %d rows, %v", m.Mode, len(rows), err)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		var sum float64
		for _, r := range rows[1:] {
			if r[col["state"]] != "COMPLETED" {
				t.Fatalf("%s: %v", m.Mode, r)
			}
			x, err := strconv.ParseFloat(r[col["response_s"]], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += x
		}
		if got := sum / 4; math.Abs(got-s.Metrics.Response.Mean) > 0.002 {
			t.Fatalf("%s: jobs.csv mean response %.4f, results %.4f", m.Mode, got, s.Metrics.Response.Mean)
		}
		// The report states the same numbers (those of results.json, which
		// equal jobs.csv's to its millisecond rounding, checked above).
		want := fmt.Sprintf("| %s | mean response | %.2f s | %.2f s |", m.Mode, s.Metrics.Response.Mean, m.Simulated.MeanResponse)
		if !strings.Contains(report, want) {
			t.Fatalf("report.md lacks %q:\n%s", want, report)
		}
	}
	for _, fig := range []string{"measured_vs_simulated.png", "response_cdf.png"} {
		b, err := os.ReadFile(filepath.Join(out, fig))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || !strings.Contains(report, "("+fig+")") {
			t.Fatalf("figure %s: %v, %d bytes, linked %v", fig, err, len(b), strings.Contains(report, fig))
		}
	}
}

// With --addr, bench run uses an existing cluster: its mode, processors,
// slice and MPL; a flag that contradicts them is refused; the cluster is
// left running.
func TestBenchRunOnAnExistingCluster(t *testing.T) {
	state := t.TempDir()
	env := append(os.Environ(), "COSCHED_STATE_DIR="+state)
	cosched := func(args ...string) (string, error) {
		cmd := coschedCmd(args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cosched("cluster", "up", "-N", "2", "--mode", "gang", "--slice", "20ms", "--mpl", "2", "--realtime-priority", "0"); err != nil {
		t.Fatalf("cluster up: %v\n%s", err, out)
	}
	t.Cleanup(func() { cosched("cluster", "down") })
	var rec struct {
		API string `json:"api"`
	}
	b, err := os.ReadFile(filepath.Join(state, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &rec)
	out, err := cosched("bench", "run", "--addr", rec.API, "--mode", "bcs", "--slice", "10ms", "--out", t.TempDir())
	if err == nil || !strings.Contains(out, "--mode bcs: the cluster at --addr runs gang") || !strings.Contains(out, "--slice 10ms: the cluster at --addr runs 20ms") {
		t.Fatalf("contradicting flags: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out, err = cosched("bench", "run", "--addr", rec.API, "--jobs", "3", "--mean-runtime", "300ms", "--work", "wall", "--out", dir)
	if err != nil {
		t.Fatalf("bench run --addr: %v\n%s", err, out)
	}
	res := readBenchRun(t, dir)
	if len(res.Modes) != 1 || res.Modes[0].Mode != "gang" || res.Modes[0].Summary.Completed != 3 {
		t.Fatalf("modes %+v", res.Modes)
	}
	if _, err := os.Stat(filepath.Join(dir, "gang", "state")); err == nil {
		t.Fatal("bench run --addr started a cluster of its own")
	}
	if out, err := cosched("nodes"); err != nil || strings.Count(out, " up ") != 2 {
		t.Fatalf("the cluster did not outlive the run: %v\n%s", err, out)
	}
}

// Ctrl-C during a run stops the cluster, keeps the jobs that finished and
// exits non-zero.
func TestBenchRunInterrupted(t *testing.T) {
	out := t.TempDir()
	cmd := coschedCmd("bench", "run", "--jobs", "30", "--mean-runtime", "1s", "--mode", "gang,space",
		"--nodes", "2", "--slice", "20ms", "--work", "wall", "--realtime-priority", "0", "--out", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	deadline := time.Now().Add(60 * time.Second)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "[gang 1/2] 2/30 jobs done") || time.Now().After(deadline) {
			break
		}
	}
	cmd.Process.Signal(os.Interrupt)
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	if err == nil {
		t.Fatal("an interrupted run exited 0")
	}
	agentsGone(t, out)
	res := readBenchRun(t, out)
	// The error is the context's (canceled) or its cause (SIGINT
	// received), as the signal reaches a wait or a request first.
	if len(res.Modes) != 1 || res.Modes[0].Mode != "gang" ||
		!strings.Contains(res.Modes[0].Error, "canceled") && !strings.Contains(res.Modes[0].Error, "SIGINT received") {
		t.Fatalf("modes %+v", res.Modes)
	}
	if s := res.Modes[0].Summary; s.Completed < 2 || s.Completed >= 30 {
		t.Fatalf("kept %d finished jobs", s.Completed)
	}
}

// bench run --addr on a cluster whose processors on this host outnumber
// its cores refuses CPU-burning ranks, naming --work wall; --work cpu
// runs anyway with a warning.
func TestBenchRunAddrChecksCores(t *testing.T) {
	state := t.TempDir()
	procs := strconv.Itoa(runtime.NumCPU() + 1)
	if code, out, stderr := cosched(t, "", "cluster", "up", "--state-dir", state, "-N", "1", "--processors", procs, "--mode", "space",
		"--realtime-priority", "0"); code != 0 {
		t.Fatalf("cluster up: exit %d\n%s%s", code, out, stderr)
	}
	t.Cleanup(func() { cosched(t, "", "cluster", "down", "--state-dir", state) })
	rec, err := os.ReadFile(filepath.Join(state, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ API string }
	json.Unmarshal(rec, &c)
	// A cluster elsewhere: the CLI signs its requests with the key file.
	t.Setenv("COSCHED_KEY_FILE", filepath.Join(state, "cluster.key"))
	code, _, stderr := cosched(t, "", "bench", "run", "--addr", c.API, "--jobs", "1", "--out", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "pass --work wall") || !strings.Contains(stderr, procs+" processors on this host") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	code, _, stderr = cosched(t, "", "bench", "run", "--addr", c.API, "--jobs", "1", "--mean-runtime", "200ms", "--work", "cpu", "--out", t.TempDir())
	if code != 0 || !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, "--work cpu given") {
		t.Fatalf("--work cpu: exit %d\n%s", code, stderr)
	}
}
