package jobcg_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/node/jobcg"
)

// weighed parses Tree.CPU ("cpu.shares 102 on DIR", "cpu.weight 10 on DIR"):
// the file written, its value and the jobs' parent directory; ok is false
// when the jobs are not weighed.
func weighed(t *testing.T, tr *jobcg.Tree) (file string, value int, dir string, ok bool) {
	t.Helper()
	s := tr.CPU()
	if strings.HasPrefix(s, "not weighed") {
		return "", 0, "", false
	}
	f := strings.Fields(s)
	if len(f) != 4 || f[2] != "on" {
		t.Fatalf("CPU() = %q: want \"FILE VALUE on DIR\"", s)
	}
	v, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("CPU() = %q: %v", s, err)
	}
	return f[0], v, f[3], true
}

// The jobs' parent gets the low CPU weight, and a rank born in its job is
// inside that parent in the cpu hierarchy: what makes busy ranks yield to
// the agent.
func TestJobsWeighLessThanTheAgent(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			tr := open(t, mode) // the default weight: the one every agent on this host writes
			file, value, dir, ok := weighed(t, tr)
			if !ok {
				if mode == "v2" && tr.CPU() != "" {
					t.Skipf("v2 here has no cpu controller (a hybrid host's unified mount): %s", tr.CPU())
				}
				t.Fatalf("jobs not weighed: %s", tr.CPU())
			}
			want := jobcg.DefaultCPUWeight
			if file == "cpu.shares" {
				want = jobcg.DefaultCPUWeight * 1024 / 100
			}
			got, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			if value != want || strings.TrimSpace(string(got)) != strconv.Itoa(want) {
				t.Fatalf("%s: CPU() says %d, the file holds %q; want %d", filepath.Join(dir, file), value, got, want)
			}

			j, err := tr.Create(5, 0)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "JOBCG_HELPER=spin")
			startIn(t, j, cmd)
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			procs := filepath.Join(dir, agentName(t, mode), "job-5", "cgroup.procs")
			b, err := os.ReadFile(procs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(strings.Fields(string(b)), strconv.Itoa(cmd.Process.Pid)) {
				t.Fatalf("rank %d is not in %s (%q)", cmd.Process.Pid, procs, b)
			}
		})
	}
}

// A weight out of range is refused, the weight named.
func TestCPUWeightOutOfRange(t *testing.T) {
	_, err := jobcg.Open(jobcg.Config{Agent: "i15-weight", Mode: "none", CPUWeight: 10001})
	if err == nil || !strings.Contains(err.Error(), "CPU weight 10001") {
		t.Fatalf("err = %v, want the CPU weight refused", err)
	}
}

// BenchmarkWakeupBesideBusyRanks measures how late a sleeping goroutine of
// this process (standing for the agent: normal policy, nice 0, as an agent
// without CAP_SYS_NICE runs) has done 100 µs of work after its wake-up
// time (an API answer, a switch) while four times as many CPU-bound ranks
// as processors spin, with the ranks
//
//   - beside: in this process's cpu cgroup, as ranks were on v1 before
//     jobs joined the cpu hierarchy;
//   - weight-100: in their jobs' cgroups at the kernel's default weight;
//   - weight-10: at the default jobs weight (DefaultCPUWeight).
//
// Compare late-p99-µs across the three, within one run: the host's other
// load moves all of them.
func BenchmarkWakeupBesideBusyRanks(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("cgroups need root")
	}
	for _, c := range []struct {
		name   string
		weight int // 0: the ranks stay beside the agent
	}{{"beside", 0}, {"weight-100", 100}, {"weight-10", jobcg.DefaultCPUWeight}} {
		b.Run(c.name, func(b *testing.B) {
			var j *jobcg.Job
			if c.weight > 0 {
				tr, err := jobcg.Open(jobcg.Config{Agent: fmt.Sprintf("i15-bench-%d", os.Getpid()), CPUWeight: c.weight})
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				if strings.HasPrefix(tr.CPU(), "not weighed") || tr.Mode() == jobcg.ModeNone {
					b.Skipf("jobs cannot be weighed here: %s %s", tr.Mode(), tr.CPU())
				}
				if j, err = tr.Create(1, 0); err != nil {
					b.Fatal(err)
				}
			}
			var cmds []*exec.Cmd
			defer func() {
				for _, cmd := range cmds {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			}()
			for range 4 * runtime.NumCPU() {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), "JOBCG_HELPER=spin")
				if j != nil {
					startIn(b, j, cmd)
				} else if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				cmds = append(cmds, cmd)
			}
			time.Sleep(200 * time.Millisecond) // the spinners are running
			const nap, work = 500 * time.Microsecond, 100 * time.Microsecond
			late := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				time.Sleep(nap)
				for time.Since(t0) < nap+work {
				}
				late = append(late, time.Since(t0)-nap-work)
			}
			b.StopTimer()
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds()), "late-p50-µs")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "late-p99-µs")
			b.ReportMetric(float64(late[len(late)-1].Microseconds()), "late-max-µs")
		})
	}
}
