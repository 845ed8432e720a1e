package deploy_test

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The scripts are shellcheck-clean (where shellcheck is installed).
func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck not installed (apt-get install shellcheck)")
	}
	var scripts []string
	for _, pat := range []string{"slurm/*.sh", "slurm/*.sbatch", "netns/*.sh"} {
		m, _ := filepath.Glob(pat)
		scripts = append(scripts, m...)
	}
	if len(scripts) < 5 {
		t.Fatalf("found only %v", scripts)
	}
	if out, err := exec.Command(sc, scripts...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
