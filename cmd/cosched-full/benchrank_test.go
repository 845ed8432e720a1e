package main

import (
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
	benchrank "github.com/cosched/cosched/bench/rank"
	"github.com/cosched/cosched/comm"
)

func TestBenchRankBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		env  string // $COSCHED_BENCH
		args []string
		want []string
	}{
		{"no template", "", []string{"--iterations", "3"},
			[]string{"--template: required when $COSCHED_BENCH is not set"}},
		{"bad template", "", []string{"--template", "50ms,25ms,ring,NB", "--iterations", "3"},
			[]string{"--template:", `unknown pattern "ring"`}},
		{"bad template in the environment", "fast,25ms,news,NB", []string{"--iterations", "3"},
			[]string{"$COSCHED_BENCH:", `grain "fast"`}},
		{"both iterations and runtime", "50ms,25ms,news,NB", []string{"--iterations", "3", "--runtime", "1m"},
			[]string{"--iterations and --runtime: give one of them, not both"}},
		{"neither iterations nor runtime", "50ms,25ms,news,NB", nil,
			[]string{"give --iterations N or --runtime D"}},
		{"zero iterations", "50ms,25ms,news,NB", []string{"--iterations", "0"},
			[]string{"--iterations 0: must be at least 1"}},
		{"negative runtime", "50ms,25ms,news,NB", []string{"--runtime", "-1s"},
			[]string{"--runtime -1s: must be positive"}},
		{"bad work", "50ms,25ms,news,NB", []string{"--iterations", "3", "--work", "gpu"},
			[]string{`--work "gpu": want cpu or wall`}},
		{"bad message size", "50ms,25ms,news,NB", []string{"--iterations", "3", "--msg-size", "8"},
			[]string{`--msg-size "8": want a size from 16 to 4194304 bytes`}},
		{"every problem at once", "", []string{"--work", "gpu", "--msg-size", "lots"},
			[]string{"4 problems with the command line", "--template: required", "give --iterations N or --runtime D", `--work "gpu"`, `--msg-size "lots"`}},
		{"bad seed", "50ms,25ms,news,NB", []string{"--iterations", "3", "--seed", "-1"},
			[]string{`invalid argument "-1" for "--seed"`}},
		{"stray argument", "50ms,25ms,news,NB", []string{"--iterations", "3", "extra"},
			[]string{`unknown command "extra"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(bench.EnvTemplate, c.env)
			code, out, errOut := cosched(t, "", append([]string{"bench-rank"}, c.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, errOut)
			}
			if out != "" {
				t.Errorf("stdout: %q", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q: %s", w, errOut)
				}
			}
			if !strings.Contains(errOut, "cosched bench-rank --help") {
				t.Errorf("stderr does not point to the help: %s", errOut)
			}
		})
	}
}

// Good flags get as far as connecting to the relay; without one (outside
// an agent) that fails with status 1, saying so.
func TestBenchRankNeedsARelay(t *testing.T) {
	for _, env := range []string{"", "50ms,25ms,news,NB"} {
		t.Setenv(bench.EnvTemplate, env)
		args := []string{"bench-rank", "--runtime", "1s", "--work", "WALL", "--msg-size", "1KiB", "--seed", "7"}
		if env == "" {
			args = append(args, "--template", "10,5,transpose,B")
		}
		t.Setenv("COSCHED_RELAY", "")
		code, out, errOut := cosched(t, "", args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "bench-rank: connecting to the agent's relay (COSCHED_RELAY)") {
			t.Errorf("$%s=%q: exit %d, stdout %q, stderr %q", bench.EnvTemplate, env, code, out, errOut)
		}
	}
}

// Given no flag, bench-rank runs the job its agent hands it in
// $COSCHED_BENCH_JOB (as far as the relay, outside an agent); a bad one is
// refused naming the variable; a flag makes it ignore the variable.
func TestBenchRankJobFromAgent(t *testing.T) {
	t.Setenv("COSCHED_RELAY", "")
	tp, _ := bench.ParseTemplate("10,5,transpose,B")
	t.Setenv(bench.EnvJob, bench.Job{Template: tp, Iterations: 3, Seed: 4, Work: "wall"}.Encode())
	code, out, errOut := cosched(t, "", "bench-rank")
	if code != 1 || out != "" || !strings.Contains(errOut, "bench-rank: connecting to the agent's relay (COSCHED_RELAY)") {
		t.Errorf("good job: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Setenv(bench.EnvJob, bench.Job{Template: tp, Work: "gpu"}.Encode())
	code, _, errOut = cosched(t, "", "bench-rank")
	if code != 2 || !strings.Contains(errOut, "$COSCHED_BENCH_JOB: job: iterations 0") || !strings.Contains(errOut, `work "gpu"`) {
		t.Errorf("bad job: exit %d, stderr %q", code, errOut)
	}
	t.Setenv(bench.EnvTemplate, "")
	code, _, errOut = cosched(t, "", "bench-rank", "--iterations", "3")
	if code != 2 || !strings.Contains(errOut, "--template: required") {
		t.Errorf("flags given: exit %d, stderr %q", code, errOut)
	}
}

func TestBenchRankSummary(t *testing.T) {
	got := benchrank.Summary(3, 8, comm.Stats{Iterations: 120, Compute: int64(6021345678 * time.Nanosecond), CommWait: int64(1302 * time.Millisecond), Wall: int64(7405 * time.Millisecond)})
	if want := "rank 3 of 8: 120 iterations, compute 6.021346s, comm wait 1.302s, wall 7.405s"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
