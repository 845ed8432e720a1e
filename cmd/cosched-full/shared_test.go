package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cosched/cosched/internal/testuser"
	"github.com/cosched/cosched/localcluster"
)

// A cluster root starts without a state directory lives in the system
// one (moved to a temporary directory here, so a real /var/lib/cosched is
// never touched): another Unix user's commands find it with no setting of
// their own, and that user's gang-scheduled job runs as them, in their
// directory, its ranks started through a copy of the binary every user
// may run (this one lives in a directory closed to them). A record the
// user may not read is named with its cause.
func TestRootClusterSharedWithAnotherUser(t *testing.T) {
	u := testuser.Add(t, "csh")
	base, err := os.MkdirTemp("", "cosched-system-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) }) // last: after cluster down
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(base, "cosched")
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "COSCHED_") && name != "XDG_STATE_HOME" && name != "HOME" {
			env = append(env, kv)
		}
	}
	rootEnv := append(env, localcluster.EnvSystemStateDir+"="+sys, "HOME="+t.TempDir(), asCosched+"=1")
	root := func(args ...string) (string, error) {
		cmd := coschedCmd(args...)
		cmd.Env = rootEnv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := root("cluster", "up", "-N", "2", "--mode", "gang", "--slice", "10ms", "--mpl", "2", "--realtime-priority", "0")
	if err != nil {
		t.Fatalf("cluster up: %v\n%s", err, out)
	}
	t.Cleanup(func() { root("cluster", "down") })
	if !strings.Contains(out, "every user's commands find it in "+sys) || strings.Contains(out, "warning") {
		t.Errorf("cluster up as root without a state directory:\n%s", out)
	}
	bin := filepath.Join(sys, "bin", "cosched")
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("the agents' binary for every user: %v %v", st, err)
	}
	if rec, err := localcluster.Load(sys); err != nil || rec.Exe != bin {
		t.Errorf("the agents run %v (%v), want %s", rec, err, bin)
	}
	if st, err := os.Stat(localcluster.KeyFile(sys)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("cluster key: %v %v, want mode 0600", st, err)
	}

	work, err := os.MkdirTemp("", "cosched-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := errors.Join(os.Chmod(work, 0o755), os.Chown(work, int(u.UID), int(u.GID))); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(work)
	as := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...) // the copy: the test binary's own directory is closed to the user
		cmd.Dir = work
		cmd.Env = append(env, "HOME=/nonexistent", localcluster.EnvSystemStateDir+"="+sys, asCosched+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	id, errs, err := as("submit", "-n", "2", "-t", "1m", "-W", "--parsable", "--", "sh", "-c", `echo "$(id -un) in $(pwd)"`)
	id = strings.TrimSpace(id)
	if err != nil {
		t.Fatalf("%s's submit -W: %v %q\n%s", u.Name, err, id, errs)
	}
	want := u.Name + " in " + real + "\n"
	if out, errs, err := as("output", id); err != nil || out != want+want {
		t.Errorf("%s's output %s: %v %q %s, want twice %q", u.Name, id, err, out, errs, want)
	}
	if out, errs, err := as("show", id); err != nil || !strings.Contains(out, "JobState=COMPLETED") || !strings.Contains(out, "UserId="+u.Name+"(") {
		t.Errorf("%s's show %s: %v\n%s%s", u.Name, id, err, out, errs)
	}

	// The real cause, not "no cluster".
	record := localcluster.File(sys)
	if err := os.Chmod(record, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs, err = as("queue")
	os.Chmod(record, 0o644)
	if err == nil || !strings.Contains(errs, record+": permission denied") {
		t.Errorf("%s's queue with %s closed to them: %v %q", u.Name, record, err, errs)
	}
}
