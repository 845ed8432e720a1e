package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runScript(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, out.String())
	}
	return out.String()
}

var tinySweep = []string{"--mode", "space,gang,bcs", "--mpl", "1,2", "--load", "0.4,0.8", "--jobs", "12"}

// Running the array script as Slurm would (task IDs 0..2 of a 3-task
// array), then the merge script, gives exactly an unsharded sweep's files,
// and plots.
func TestSlurmSweepArray(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildCosched(t)
	out := t.TempDir()
	for task := 0; task < 3; task++ {
		env := []string{"COSCHED=" + bin, "SLURM_ARRAY_TASK_ID=" + string(rune('0'+task)), "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_MIN=0", "SLURM_CPUS_PER_TASK=2"}
		runScript(t, env, "slurm/sweep-array.sbatch", append([]string{out}, tinySweep...)...)
	}
	for k := 1; k <= 3; k++ {
		if _, err := os.Stat(filepath.Join(out, "shard-"+string(rune('0'+k))+"-of-3.json")); err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
	}
	runScript(t, []string{"COSCHED=" + bin}, "slurm/sweep-merge.sbatch", out)

	whole := t.TempDir()
	cmd := exec.Command(bin, append([]string{"sim", "sweep", "--out", whole}, tinySweep...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unsharded sweep: %v\n%s", err, b)
	}
	for _, name := range []string{"results.csv", "results.json"} {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, _ := os.ReadFile(filepath.Join(whole, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: merged shards differ from the unsharded sweep", name)
		}
	}
	plots, _ := filepath.Glob(filepath.Join(out, "plots", "*.svg"))
	if len(plots) == 0 {
		t.Error("no plots written")
	}

	// Outside an array the script says what is wrong.
	cmd = exec.Command("bash", "slurm/sweep-array.sbatch", out)
	cmd.Env = append(os.Environ(), "COSCHED="+bin, "SLURM_ARRAY_TASK_ID=")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "not running as a Slurm array task") {
		t.Errorf("outside an array: %v\n%s", err, b)
	}
}

// submit-sweep.sh submits the array, then the merge depending on it.
func TestSlurmSubmit(t *testing.T) {
	fake := t.TempDir()
	log := filepath.Join(fake, "calls")
	// A stand-in for sbatch: record the arguments, answer with a job id.
	sbatch := "#!/usr/bin/env bash\necho \"$*\" >> " + log + "\nif [[ $* == *--array* ]]; then echo '101;cluster'; else echo 102; fi\n"
	if err := os.WriteFile(filepath.Join(fake, "sbatch"), []byte(sbatch), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "res")
	got := runScript(t, []string{"PATH=" + fake + ":" + os.Getenv("PATH")}, "slurm/submit-sweep.sh", out, "4", "--load", "0.5")
	if !strings.Contains(got, "array job 101 (4 shards), then merge and plot job 102") {
		t.Errorf("output: %s", got)
	}
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "--array=1-4") || !strings.HasSuffix(lines[0], "sweep-array.sbatch "+out+" --load 0.5") ||
		!strings.Contains(lines[1], "--dependency=afterok:101") || !strings.HasSuffix(lines[1], "sweep-merge.sbatch "+out) {
		t.Errorf("sbatch calls:\n%s", calls)
	}
	cmd := exec.Command("bash", "slurm/submit-sweep.sh", out, "zero")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "SHARDS must be a positive integer") {
		t.Errorf("bad shard count: %v\n%s", err, b)
	}
}
