package deploy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSrun stands in for srun: it runs the command once per selected host
// of FAKE_SLURM_HOSTS, here, with the environment slurmd gives a task, and
// passes SIGTERM and SIGINT on to the tasks as srun does.
const fakeSrun = `#!/usr/bin/env bash
set -u
echo "srun $*" >>"$FAKE_SLURM_LOG"
read -ra hosts <<<"$FAKE_SLURM_HOSTS"
only="" exclude=""
while (($#)); do
	case $1 in
	--nodelist=* | -w=*) only=${1#*=} ;;
	--exclude=* | -x=*) exclude=${1#*=} ;;
	--*=* | --overlap | --whole | --exclusive) ;;
	-*) echo "fake srun: unsupported option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
pids=()
id=0
for h in "${hosts[@]}"; do
	[[ -n $only && $h != "$only" ]] && continue
	[[ -n $exclude && $h == "$exclude" ]] && continue
	SLURMD_NODENAME=$h SLURM_NODEID=$id SLURM_PROCID=$id SLURM_STEP_ID=$RANDOM "$@" &
	pids+=($!)
	id=$((id + 1))
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null' TERM
trap 'kill -INT "${pids[@]}" 2>/dev/null' INT
rc=0
for p in "${pids[@]}"; do
	while :; do
		wait "$p"
		s=$?
		kill -0 "$p" 2>/dev/null || break # not just a signal interrupting wait
	done
	((s == 0)) || rc=$s
done
exit "$rc"
`

const fakeScontrol = `#!/usr/bin/env bash
[[ $1 == show && $2 == hostnames ]] || { echo "fake scontrol: $*" >&2; exit 2; }
printf '%s\n' $FAKE_SLURM_HOSTS
`

// fakeBenchRun wraps the real binary: it records the bench run call (and
// can hang in it, for the cancellation test), then runs the real command.
const fakeBenchRun = `#!/usr/bin/env bash
set -eu
if [[ ${1:-} == bench && ${2:-} == run ]]; then
	echo "bench run ${*:3}" >>"$FAKE_SLURM_LOG"
	[[ -z ${FAKE_BENCH_HANG:-} ]] || { touch "$FAKE_BENCH_HANG"; sleep 60; }
fi
exec "$REAL_COSCHED" "$@"
`

type fakeSlurm struct {
	dir, log, out string
	env           []string
}

func newFakeSlurm(t *testing.T, hosts string) *fakeSlurm {
	bin := buildCosched(t)
	f := &fakeSlurm{dir: t.TempDir()}
	f.log = filepath.Join(f.dir, "calls")
	f.out = filepath.Join(t.TempDir(), "res")
	for name, text := range map[string]string{"srun": fakeSrun, "scontrol": fakeScontrol, "cosched": fakeBenchRun} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Hosts are loopback addresses, so agents on one machine have
	// addresses of their own (COSCHED_BIND_ADDR=nodename resolves them).
	f.env = []string{"PATH=" + f.dir + ":" + os.Getenv("PATH"), "FAKE_SLURM_HOSTS=" + hosts, "FAKE_SLURM_LOG=" + f.log,
		"REAL_COSCHED=" + bin, "COSCHED=" + filepath.Join(f.dir, "cosched"), "SLURM_JOB_ID=4242", "SLURM_JOB_NODELIST=fake[1-3]",
		"COSCHED_BIND_ADDR=nodename", "COSCHED_PORT=0", "COSCHED_API_PORT=0", "COSCHED_PROCESSORS=1",
		"COSCHED_REALTIME_PRIORITY=0", "COSCHED_SLICE=10ms", "COSCHED_START_TIMEOUT=30"}
	t.Cleanup(func() { killAgentsUnder(t, f.out) })
	return f
}

func (f *fakeSlurm) command(args ...string) *exec.Cmd {
	cmd := exec.Command("bash", append([]string{"slurm/bench-run.sbatch", f.out}, args...)...)
	cmd.Env = append(os.Environ(), f.env...)
	return cmd
}

func (f *fakeSlurm) calls() string {
	b, _ := os.ReadFile(f.log)
	return string(b)
}

// The script as Slurm runs it on a 3-node allocation: per mode, agents on
// every node (the first the controller), bench run against the
// controller's API, then no agent left, nor the key file.
func TestSlurmBenchRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agents")
	}
	f := newFakeSlurm(t, "127.0.0.1 127.0.0.2 127.0.0.3")
	f.env = append(f.env, "COSCHED_MODES=gang,bcs")
	// The fake nodes share this host's cores: wall-clock work (bench run
	// refuses CPU-burning ranks on more local processors than cores).
	cmd := f.command("--jobs", "3", "--mean-runtime", "1s", "--work", "wall")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench-run.sbatch: %v\n%s\ncalls:\n%s", err, out.String(), f.calls())
	}
	calls := f.calls()
	for _, mode := range []string{"gang", "bcs"} {
		state := filepath.Join(f.out, mode, "state", "agents")
		var info readyInfo
		b, err := os.ReadFile(filepath.Join(state, "127.0.0.1", "ready.json"))
		if err == nil {
			err = json.Unmarshal(b, &info)
		}
		if err != nil {
			t.Fatalf("%s: controller's ready file: %v\n%s", mode, err, out.String())
		}
		if !strings.HasPrefix(info.API, "127.0.0.1:") || !strings.HasPrefix(info.Gossip, "127.0.0.1:") {
			t.Errorf("%s: controller at %+v, want 127.0.0.1", mode, info)
		}
		want := "bench run --addr " + info.API + " --mode " + mode + " --nodes 3 --out " + filepath.Join(f.out, mode) + " --jobs 3 --mean-runtime 1s --work wall"
		if !strings.Contains(calls, want+"\n") {
			t.Errorf("%s: no call %q in:\n%s", mode, want, calls)
		}
		for _, host := range []string{"127.0.0.2", "127.0.0.3"} {
			b, _ := os.ReadFile(filepath.Join(state, host, "ready.json"))
			if !strings.Contains(string(b), `"gossip":"`+host+`:`) {
				t.Errorf("%s: agent %s's ready file: %s", mode, host, b)
			}
		}
		if _, err := os.Stat(filepath.Join(state, "..", "cluster.key")); !os.IsNotExist(err) {
			t.Errorf("%s: the key file is still there (%v)", mode, err)
		}
		// The real bench run ran its 3 jobs on the 3 agents, in the mode.
		var res struct {
			Nodes int `json:"nodes"`
			Modes []struct {
				Mode    string `json:"mode"`
				Summary struct {
					Completed int `json:"completed"`
				} `json:"summary"`
			} `json:"modes"`
		}
		b, err = os.ReadFile(filepath.Join(f.out, mode, "results.json"))
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil || res.Nodes != 3 || len(res.Modes) != 1 || res.Modes[0].Mode != mode || res.Modes[0].Summary.Completed != 3 {
			t.Errorf("%s: bench run's results: %v %+v", mode, err, res)
		}
	}
	if n := strings.Count(calls, "srun "); n != 4 {
		t.Errorf("want 4 srun calls (controller and workers, per mode), got %d:\n%s", n, calls)
	}
	if !strings.Contains(calls, "--nodelist=127.0.0.1 ") || !strings.Contains(calls, "--exclude=127.0.0.1 ") {
		t.Errorf("srun calls:\n%s", calls)
	}
	if left := agentsUnder(f.out); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}
}

// Cancelled while bench run runs (Slurm sends SIGTERM to the batch step's
// processes), the script stops the agents and leaves none.
func TestSlurmBenchRunCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agents")
	}
	f := newFakeSlurm(t, "127.0.0.1 127.0.0.2")
	hang := filepath.Join(f.dir, "bench-started")
	f.env = append(f.env, "FAKE_BENCH_HANG="+hang)
	cmd := f.command()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	reaped := make(chan struct{})
	go func() { done <- cmd.Wait(); close(reaped) }()
	t.Cleanup(func() {
		select {
		case <-reaped:
			// Its group id is free, and pids are reused (within seconds on
			// a busy machine with pid_max 32768): killing it now could hit
			// another test's rank, which leads a group of its own.
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(hang); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the script ended before bench run: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bench run not reached in 30 s:\n%s", out.String())
		}
	}
	running := agentsUnder(f.out)
	if len(running) != 2 {
		t.Errorf("%d agents running during bench run, want 2", len(running))
	}
	for _, pid := range running {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if args := string(b); !strings.Contains(args, "--key-file") || strings.Contains(args, "encrypt") {
			t.Errorf("agent's command line should name the key file, not the key: %q", args)
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the batch step's processes, as scancel does
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("cancelled script exited 0:\n%s", out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("script still running 30 s after SIGTERM:\n%s", out.String())
	}
	if left := agentsUnder(f.out); len(left) > 0 {
		t.Errorf("agents left running after cancel: %v\n%s", left, out.String())
	}
}

// An agent that cannot start fails the script with its log, and nothing is left.
func TestSlurmBenchRunAgentFails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	f := newFakeSlurm(t, "127.0.0.1 127.0.0.2")
	f.env = append(f.env, "COSCHED_SLICE=soon")
	b, err := f.command().CombinedOutput()
	if err == nil || !strings.Contains(string(b), "an agent exited") || !strings.Contains(string(b), "--slice") {
		t.Errorf("bad slice: %v\n%s", err, b)
	}
	if strings.Contains(f.calls(), "bench run") {
		t.Errorf("bench run ran without a cluster:\n%s", f.calls())
	}
	if left := agentsUnder(f.out); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}
	// Outside an allocation the script says so.
	cmd := exec.Command("bash", "slurm/bench-run.sbatch", f.out)
	cmd.Env = append(os.Environ(), "SLURM_JOB_NODELIST=")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "not running in a Slurm allocation") {
		t.Errorf("outside an allocation: %v\n%s", err, b)
	}
}
