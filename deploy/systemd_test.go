package deploy_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/clusterkey"
)

const (
	unitFile = "systemd/cosched-agent.service"
	envFile  = "systemd/cosched-agent.env"
)

// readUnit returns the unit's [Service] settings (continuation lines
// joined), each key with its values in order.
func readUnit(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), " ")
	set := map[string][]string{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not a setting: %q", unitFile, line)
			}
			set[k] = append(set[k], v)
		}
	}
	return set
}

// readEnv parses the environment file as systemd does for plain KEY=VALUE lines.
func readEnv(t *testing.T) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open(envFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(k) {
			t.Fatalf("%s: not KEY=VALUE: %q", envFile, line)
		}
		if strings.ContainsAny(v, " \t\"'\\$") {
			t.Errorf("%s: %s=%q: values must be single words (each becomes one argument)", envFile, k, v)
		}
		if _, dup := env[k]; dup {
			t.Errorf("%s: %s set twice", envFile, k)
		}
		env[k] = v
		order = append(order, k)
	}
	return env, order
}

// agentHelpFlags lists the long flags `cosched agent --help` documents.
func agentHelpFlags(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command(bin, "agent", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("agent --help: %v\n%s", err, out)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, m[1])
	}
	if len(flags) < 10 {
		t.Fatalf("found only %v in agent --help:\n%s", flags, out)
	}
	return flags
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// The unit, its environment file and the agent's flags cannot drift apart:
// every variable ExecStart uses is defined, every defined one is used,
// every flag exists, and every agent setting is there (the gossip key goes
// through --config, so it stays off the command line).
func TestSystemdUnitMatchesAgent(t *testing.T) {
	bin := buildCosched(t)
	unit := readUnit(t)
	env, order := readEnv(t)
	execStart := unit["ExecStart"]
	if len(execStart) != 1 {
		t.Fatalf("want one ExecStart, got %q", execStart)
	}
	args := strings.Fields(execStart[0])
	if len(args) < 2 || !filepath.IsAbs(args[0]) || filepath.Base(args[0]) != "cosched" || args[1] != "agent" {
		t.Fatalf("ExecStart should run /…/cosched agent: %q", execStart[0])
	}
	used := map[string]bool{}
	for _, m := range varRef.FindAllStringSubmatch(execStart[0], -1) {
		v := m[1]
		if v == "" {
			t.Errorf("ExecStart uses $%s: write ${%s}, which systemd passes as one argument even when empty", m[2], m[2])
			v = m[2]
		}
		used[v] = true
		if _, ok := env[v]; !ok {
			t.Errorf("ExecStart uses ${%s}, which %s does not define", v, envFile)
		}
	}
	for _, k := range order {
		if !used[k] {
			t.Errorf("%s defines %s, which ExecStart does not use", envFile, k)
		}
	}
	help := agentHelpFlags(t, bin)
	inUnit := map[string]bool{}
	for _, a := range args[2:] {
		m := regexp.MustCompile(`^--([a-z][a-z-]*)=\$\{[A-Z0-9_]+\}$`).FindStringSubmatch(a)
		if m == nil {
			t.Errorf("ExecStart argument %q: want --flag=${VAR}", a)
			continue
		}
		if !slices.Contains(help, m[1]) {
			t.Errorf("ExecStart passes --%s, which `cosched agent --help` does not list", m[1])
		}
		inUnit[m[1]] = true
	}
	for _, f := range help {
		switch f {
		case "help", "local", "encrypt-key": // not for a service; the key goes in the --config file
		case "cleanup": // ExecStopPost's, not a setting
		default:
			if !inUnit[f] {
				t.Errorf("`cosched agent --%s` has no variable in %s", f, unitFile)
			}
		}
	}

	// What the agent needs of the service.
	want := map[string]string{"KillMode": "process", "KillSignal": "SIGTERM", "EnvironmentFile": "/etc/cosched/agent.env",
		"AmbientCapabilities": "CAP_SYS_NICE", "CapabilityBoundingSet": "CAP_SYS_NICE", "StateDirectory": "cosched"}
	for k, v := range want {
		if got := unit[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	if env["COSCHED_AGENT_STATE_DIR"] != "/var/lib/"+unit["StateDirectory"][0] {
		t.Errorf("COSCHED_AGENT_STATE_DIR=%s is not the unit's StateDirectory", env["COSCHED_AGENT_STATE_DIR"])
	}
	for _, k := range []string{"RestrictRealtime", "PrivateNetwork", "DynamicUser"} {
		if v := unit[k]; len(v) > 0 && v[0] != "no" {
			t.Errorf("%s=%s would break the agent", k, v[0])
		}
	}
}

// expandExecStart turns ExecStart into an argv the way systemd does for
// ${VAR} (one argument each, empty when the value is empty).
func expandExecStart(t *testing.T, env map[string]string) []string {
	return expandExec(t, "ExecStart", env)
}

// expandExec turns the unit's command line key into an argv (see
// expandExecStart).
func expandExec(t *testing.T, key string, env map[string]string) []string {
	var argv []string
	for _, a := range strings.Fields(readUnit(t)[key][0]) {
		argv = append(argv, varRef.ReplaceAllStringFunc(a, func(m string) string {
			return env[strings.Trim(m, "${}")]
		}))
	}
	return argv
}

// The unit's command line, with the environment file's values, starts a
// working agent: a controller and one agent that joins it (only the
// addresses, ports and the state directory are changed, to run here), and both
// leave cleanly on SIGTERM, the unit's stop signal.
func TestSystemdExecStartRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents")
	}
	bin := buildCosched(t)
	base, _ := readEnv(t)
	dir := t.TempDir()
	t.Cleanup(func() { killAgentsUnder(t, dir) })
	start := func(name string, over map[string]string) (*exec.Cmd, readyInfo) {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range over {
			env[k] = v
		}
		argv := expandExecStart(t, env)
		ready := filepath.Join(dir, name+".ready")
		cmd := exec.Command(bin, append(argv[1:], "--ready-file", ready)...) // ready file: hidden flag, for this test only
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, waitReadyFile(t, ready, filepath.Join(dir, name+".log"))
	}
	// The unit's key file, made as an operator would; the CLI signs with it.
	keyFile := filepath.Join(dir, "cluster.key")
	if _, err := clusterkey.Generate(keyFile); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COSCHED_KEY_FILE", keyFile)
	common := map[string]string{"COSCHED_AGENT_BIND": "127.0.0.1:0", "COSCHED_AGENT_API_PORT": "0", "COSCHED_AGENT_RAFT_PORT": "0", "COSCHED_AGENT_PROCESSORS": "1",
		"COSCHED_AGENT_REALTIME_PRIORITY": "0", "COSCHED_AGENT_KEY_FILE": keyFile}
	ctl := map[string]string{"COSCHED_AGENT_NAME": "c0", "COSCHED_AGENT_CONTROLLER": "true", "COSCHED_AGENT_STATE_DIR": filepath.Join(dir, "c0")}
	wrk := map[string]string{"COSCHED_AGENT_NAME": "w1", "COSCHED_AGENT_STATE_DIR": filepath.Join(dir, "w1")}
	for k, v := range common {
		ctl[k], wrk[k] = v, v
	}
	c0, info := start("c0", ctl)
	wrk["COSCHED_AGENT_JOIN"] = info.Gossip
	w1, _ := start("w1", wrk)
	waitNodesUp(t, bin, info.API, 2)
	for _, cmd := range []*exec.Cmd{w1, c0} {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent %v after SIGTERM: %v", cmd.Args[1:3], err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("agent still running 20 s after SIGTERM")
		}
	}
	// ExecStopPost, after an orderly stop, finds nothing to clean and
	// succeeds (systemd would mark the unit failed otherwise).
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	for k, v := range ctl {
		env[k] = v
	}
	post := expandExec(t, "ExecStopPost", env)
	if out, err := exec.Command(bin, post[1:]...).CombinedOutput(); err != nil {
		t.Errorf("ExecStopPost %v: %v\n%s", post[1:], err, out)
	}
}

// systemd-analyze verify accepts the unit (where systemd is installed).
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	bin := buildCosched(t)
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart's and ExecStopPost's program exists: point
	// them at the build.
	unit := filepath.Join(t.TempDir(), "cosched-agent.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "=/usr/local/bin/cosched ", "="+bin+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

type readyInfo struct {
	Name   string `json:"name"`
	PID    int    `json:"pid"`
	Gossip string `json:"gossip"`
	API    string `json:"api"`
}

func waitReadyFile(t *testing.T, path, log string) readyInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			var info readyInfo
			if err := json.Unmarshal(b, &info); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return info
		}
		if time.Now().After(deadline) {
			l, _ := os.ReadFile(log)
			t.Fatalf("no %s after 30 s; log:\n%s", path, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNodesUp waits until `cosched nodes` at api lists n agents up.
func waitNodesUp(t *testing.T, bin, api string, n int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command(bin, "nodes", "--addr", api).CombinedOutput()
		up := 0
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[1] == "up" {
				up++
			}
		}
		if err == nil && up == n {
			return string(out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d agents up at %s after 30 s, want %d: %v\n%s", up, api, n, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
