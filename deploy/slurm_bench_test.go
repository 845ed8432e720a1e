package deploy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// fakeBenchRun wraps the real binary: it records the bench run call, then
// runs the real command.
const fakeBenchRun = `#!/usr/bin/env bash
set -eu
if [[ ${1:-} == bench && ${2:-} == run ]]; then
	echo "bench run ${*:3}" >>"$FAKE_SLURM_LOG"
fi
exec "$REAL_COSCHED" "$@"
`

// fakeScancel fails, as scancel does outside a Slurm cluster: the script
// then signals its steps' processes itself.
const fakeScancel = `#!/usr/bin/env bash
echo "scancel $*" >>"$FAKE_SLURM_LOG"
exit 1
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
	for name, text := range map[string]string{"srun": fakeSrun, "scontrol": fakeScontrol, "scancel": fakeScancel, "cosched": fakeBenchRun} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Hosts are loopback addresses, so agents on one machine have
	// addresses of their own (COSCHED_BIND_ADDR=nodename resolves them).
	f.env = []string{"PATH=" + f.dir + ":" + os.Getenv("PATH"), "FAKE_SLURM_HOSTS=" + hosts, "FAKE_SLURM_LOG=" + f.log,
		"REAL_COSCHED=" + bin, "COSCHED=" + filepath.Join(f.dir, "cosched"), "SLURM_JOB_ID=4242", "SLURM_JOB_NODELIST=fake[1-2]",
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

// COSCHED_BIND_ADDR=nodename: each agent listens on the address its node's
// name resolves to. This needs node names that resolve to distinct
// addresses, which one host's real Slurm (deploy/slurmtest: every node is
// localhost) cannot give, so a fake srun runs the tasks here as nodes
// 127.0.0.1 and 127.0.0.2. Everything else of the script runs on a real
// Slurm (slurm_real_test.go).
func TestSlurmBenchRunNodename(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agents")
	}
	f := newFakeSlurm(t, "127.0.0.1 127.0.0.2")
	f.env = append(f.env, "COSCHED_MODES=gang")
	// The fake nodes share this host's cores: wall-clock work (bench run
	// refuses CPU-burning ranks on more local processors than cores).
	cmd := f.command("--jobs", "2", "--mean-runtime", "1s", "--work", "wall")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench-run.sbatch: %v\n%s\ncalls:\n%s", err, out.String(), f.calls())
	}
	calls := f.calls()
	for _, mode := range []string{"gang"} {
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
		want := "bench run --addr " + info.API + " --mode " + mode + " --nodes 2 --out " + filepath.Join(f.out, mode) + " --jobs 2 --mean-runtime 1s --work wall"
		if !strings.Contains(calls, want+"\n") {
			t.Errorf("%s: no call %q in:\n%s", mode, want, calls)
		}
		for _, host := range []string{"127.0.0.2"} {
			b, _ := os.ReadFile(filepath.Join(state, host, "ready.json"))
			if !strings.Contains(string(b), `"gossip":"`+host+`:`) {
				t.Errorf("%s: agent %s's ready file: %s", mode, host, b)
			}
		}
		if _, err := os.Stat(filepath.Join(state, "..", "cluster.key")); !os.IsNotExist(err) {
			t.Errorf("%s: the key file is still there (%v)", mode, err)
		}
		// The real bench run ran its 2 jobs on the 2 agents, in the mode.
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
		if err != nil || res.Nodes != 2 || len(res.Modes) != 1 || res.Modes[0].Mode != mode || res.Modes[0].Summary.Completed != 2 {
			t.Errorf("%s: bench run's results: %v %+v", mode, err, res)
		}
	}
	if n := strings.Count(calls, "srun "); n != 2 {
		t.Errorf("want 2 srun calls (controller and workers), got %d:\n%s", n, calls)
	}
	if !strings.Contains(calls, "--nodelist=127.0.0.1 ") || !strings.Contains(calls, "--exclude=127.0.0.1 ") {
		t.Errorf("srun calls:\n%s", calls)
	}
	if left := agentsUnder(f.out); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}
}
