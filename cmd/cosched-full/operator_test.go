package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The operator raft commands' command lines: a name, exactly one, not
// empty; list-peers takes none.
func TestOperatorRaftUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"operator", "raft", "remove-peer"}, "accepts 1 arg(s), received 0"},
		{[]string{"operator", "raft", "remove-peer", "c1", "c2"}, "accepts 1 arg(s), received 2"},
		{[]string{"operator", "raft", "remove-peer", ""}, "remove-peer: NAME is empty"},
		{[]string{"operator", "raft", "list-peers", "c1"}, `unknown command "c1"`},
	} {
		code, stdout, stderr := cosched(t, "", tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// On a local cluster, a0 is the group's only server: it leads, and it is
// not removed; an unknown name is refused.
func TestOperatorRaftOnACluster(t *testing.T) {
	bin := coschedBinary(t)
	state := filepath.Join(t.TempDir(), "state")
	sh := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cmd.Environ(), "COSCHED_STATE_DIR="+state, "COSCHED_ADDR=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sh("cluster", "up", "-N", "1", "--mode", "space", "--mpl", "1", "--realtime-priority", "0"); err != nil {
		t.Fatalf("cluster up: %v\n%s", err, out)
	}
	t.Cleanup(func() { sh("cluster", "down") })
	out, err := sh("operator", "raft", "list-peers")
	if want := regexp.MustCompile(`^NAME +ADDRESS +STATE +VOTER +AGENT\na0 +127\.0\.0\.1:\d+ +leader +true +alive\n$`); err != nil || !want.MatchString(out) {
		t.Errorf("list-peers: %v\n%s\nwant %s", err, out, want)
	}
	for name, want := range map[string]string{
		"a0": "cosched: controller a0 leads the controllers' raft group, and the leader is not removed",
		"c7": "cosched: controller c7: not in the controllers' raft group (HTTP 404)",
	} {
		if out, err := sh("operator", "raft", "remove-peer", name); err == nil || !strings.Contains(out, want) {
			t.Errorf("remove-peer %s: %v\n%s\nwant %q", name, err, out, want)
		}
	}
}

// --dead-controller-after and its TOML key: 0 (never) by default, the
// flag over the file, a bad value named by its flag.
func TestAgentDeadControllerAfter(t *testing.T) {
	conf := writeFile(t, "dead.toml", "dead_controller_after = \"30m\"\n")
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"--dead-controller-after", "90s"}, 90 * time.Second},
		{[]string{"--config", conf}, 30 * time.Minute},
		{[]string{"--config", conf, "--dead-controller-after", "0"}, 0},
	} {
		cfg, err := agentSettings(t, tc.args...)
		if err != nil || cfg.DeadControllerAfter != tc.want {
			t.Errorf("%v: dead controller after %v (%v), want %v", tc.args, cfg.DeadControllerAfter, err, tc.want)
		}
	}
	for _, bad := range []string{"-1s", "soon"} {
		code, _, errOut := cosched(t, "", "agent", "--name", "n0", "--state-dir", t.TempDir(), "--dead-controller-after", bad)
		if want := `--dead-controller-after "` + bad + `": want a duration of at least 0`; code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("--dead-controller-after %s: exit %d, stderr %q; want 2 and %q", bad, code, errOut, want)
		}
	}
}
