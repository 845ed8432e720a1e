package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The scripts' own checks, before they ask anything of Slurm: each names
// what is wrong and exits non-zero. (Everything else of them runs on a real
// Slurm: slurm_real_test.go.)
func TestSlurmScriptsBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res")
	for _, c := range []struct {
		env    []string
		script string
		args   []string
		want   string
	}{
		{nil, "slurm/submit-sweep.sh", []string{out, "zero"}, "SHARDS must be a positive integer, got 'zero'"},
		{nil, "slurm/submit-sweep.sh", []string{out, "2", "--load", "0.5", "--parallel", "two"}, "--parallel must be a positive integer, got 'two'"},
		{nil, "slurm/submit-sweep.sh", []string{out, "2", "--parallel=0"}, "--parallel must be a positive integer, got '0'"},
		{[]string{"SLURM_ARRAY_TASK_ID="}, "slurm/sweep-array.sbatch", []string{out}, "not running as a Slurm array task"},
		{[]string{"SLURM_JOB_NODELIST="}, "slurm/bench-run.sbatch", []string{out}, "not running in a Slurm allocation"},
		{[]string{"SLURM_JOB_NODELIST=n1", "COSCHED_BIND_ADDR=eth9"}, "slurm/bench-run.sbatch", []string{out}, "COSCHED_BIND_ADDR must be auto or nodename, got 'eth9'"},
		{[]string{"SLURM_JOB_NODELIST=n1", "COSCHED_SUSPEND=sigstop"}, "slurm/bench-run.sbatch", []string{out}, "COSCHED_SUSPEND must be signal or freezer, got 'sigstop'"},
	} {
		cmd := exec.Command("bash", append([]string{c.script}, c.args...)...)
		cmd.Env = append(os.Environ(), c.env...)
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %v: %v\n%s\nwant %q", c.script, c.args, err, b, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused call created %s (%v)", out, err)
	}
}
