package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node"
)

// agentSettings runs `cosched agent args` up to the point where it would
// start, and returns the agent's configuration.
func agentSettings(t *testing.T, args ...string) (node.Config, error) {
	t.Helper()
	var cfg node.Config
	cmd := newAgentCmdRun(func(_ context.Context, f *agentFlags) error {
		var err error
		cfg, err = agentConfig(f)
		return err
	})
	cmd.SetArgs(append([]string{"--name", "n0", "--state-dir", t.TempDir()}, args...))
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	err := cmd.Execute()
	return cfg, err
}

func TestAgentBackfillOptions(t *testing.T) {
	conf := writeFile(t, "agent.toml", "controller = true\npolicy = \"sjf-bf\"\nreservations = \"3\"\nreservations_mode = \"fixed\"\n")
	for _, tc := range []struct {
		args []string
		want gang.Backfill
	}{
		{[]string{"--controller", "--policy", "priority-bf", "--reservations", "inf", "--reservations-mode", "fixed", "--weights", "wx=1,ww=0.5"},
			gang.Backfill{Reservations: gang.UnlimitedReservations, Mode: gang.Fixed, Weights: &gang.Weights{Wait: 0.5, Expansion: 1}}},
		{[]string{"--controller", "--policy", "sjf-bf"}, gang.Backfill{Reservations: 1, Mode: gang.Dynamic}},
		// Empty values (the systemd unit's unset variables) are the defaults.
		{[]string{"--controller", "--policy", "easy", "--reservations=", "--reservations-mode=", "--weights="}, gang.Backfill{}},
		{[]string{"--config", conf}, gang.Backfill{Reservations: 3, Mode: gang.Fixed}},
		{[]string{"--config", conf, "--reservations", "2"}, gang.Backfill{Reservations: 2, Mode: gang.Fixed}},
	} {
		cfg, err := agentSettings(t, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(cfg.Backfill, tc.want) {
			t.Errorf("%v: backfill %+v, want %+v", tc.args, cfg.Backfill, tc.want)
		}
	}
}

func TestAgentBadBackfillOptions(t *testing.T) {
	easyConf := writeFile(t, "easy.toml", "policy = \"easy\"\nreservations_mode = \"fixed\"\n")
	badConf := writeFile(t, "bad.toml", "policy = \"lxfw-bf\"\nweights = \"wq=1\"\n")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"agent", "--policy", "sjf-bf", "--reservations", "0"}, []string{`--reservations "0": want a count of at least 1, or inf`}},
		{[]string{"agent", "--policy", "fcfs-bf", "--reservations-mode", "sticky"}, []string{`--reservations-mode "sticky": want dynamic or fixed`}},
		{[]string{"agent", "--policy", "easy", "--reservations", "2"}, []string{"--reservations applies only to the priority-backfill policies"}},
		{[]string{"agent", "--policy", "sjf-bf", "--weights", "ww=1"}, []string{"--weights applies only to fcfs-bf, priority-bf and lxfw-bf"}},
		{[]string{"agent", "--config", easyConf}, []string{"--reservations-mode applies only"}},
		{[]string{"agent", "--config", badConf}, []string{`--weights "wq=1": unknown weight "wq"`}},
		{[]string{"cluster", "up", "--policy", "conservative", "--reservations", "inf"}, []string{"--reservations applies only"}},
		{[]string{"cluster", "up", "--policy", "fcfs-bf", "--weights", "ww=x"}, []string{`--weights "ww=x": weight ww: "x" is not a finite number`}},
		{[]string{"cluster", "up", "--policy", "nope"}, []string{`--policy "nope": unknown policy`}},
	} {
		args := append(append([]string{}, tc.args...), "--state-dir", t.TempDir())
		if tc.args[0] == "agent" {
			args = append(args, "--name", "n0")
		}
		code, _, errOut := cosched(t, "", args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
}

func TestAgentControllerGrace(t *testing.T) {
	conf := writeFile(t, "grace.toml", "controller_grace = \"30s\"\n")
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 5 * time.Minute},
		{[]string{"--controller-grace", "0"}, 0},
		{[]string{"--config", conf}, 30 * time.Second},
		{[]string{"--config", conf, "--controller-grace", "2m"}, 2 * time.Minute},
	} {
		cfg, err := agentSettings(t, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if cfg.ControllerGrace != tc.want {
			t.Errorf("%v: controller grace %v, want %v", tc.args, cfg.ControllerGrace, tc.want)
		}
	}
	for _, bad := range []string{"-1s", "soon"} {
		code, _, errOut := cosched(t, "", "agent", "--name", "n0", "--state-dir", t.TempDir(), "--controller-grace", bad)
		if want := `--controller-grace "` + bad + `": want a duration of at least 0`; code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("--controller-grace %s: exit %d, stderr %q; want 2 and %q", bad, code, errOut, want)
		}
	}
}

func TestAgentContainmentFlags(t *testing.T) {
	conf := writeFile(t, "cg.toml", "cgroups = \"none\"\nsuspend = \"freezer\"\nmem_reserve = \"1GiB\"\n")
	for _, tc := range []struct {
		args             []string
		cgroups, suspend string
		reserve          int64
	}{
		{nil, "auto", api.SuspendSignal, 512 << 20},
		{[]string{"--cgroups=", "--suspend=", "--mem-reserve="}, "", api.SuspendSignal, 512 << 20}, // the unit's empty variables
		{[]string{"--cgroups", "v1", "--suspend", "freezer", "--mem-reserve", "none"}, "v1", api.SuspendFreezer, -1},
		{[]string{"--config", conf}, "none", api.SuspendFreezer, 1 << 30},
		{[]string{"--config", conf, "--suspend", "signal"}, "none", api.SuspendSignal, 1 << 30},
	} {
		cfg, err := agentSettings(t, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if cfg.Cgroups != tc.cgroups || cfg.Suspend != tc.suspend || cfg.MemReserve != tc.reserve {
			t.Errorf("%v: cgroups %q suspend %q reserve %d, want %q %q %d", tc.args, cfg.Cgroups, cfg.Suspend, cfg.MemReserve, tc.cgroups, tc.suspend, tc.reserve)
		}
	}
	_, err := agentSettings(t, "--cgroups", "v3", "--suspend", "sigstop", "--mem-reserve", "lots")
	for _, want := range []string{`--cgroups "v3"`, `--suspend "sigstop"`, `--mem-reserve "lots"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad flags: %v, want it to name %s", err, want)
		}
	}
}

// --strobe-multicast (or strobe_multicast) reaches the agent's
// configuration; anything but an IPv4 multicast group and port is refused
// by name.
func TestAgentStrobeMulticast(t *testing.T) {
	conf := writeFile(t, "agent.toml", "strobe_multicast = \"239.1.2.3:7950\"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--strobe-multicast", "239.9.9.9:1"}, "239.9.9.9:1"},
		{[]string{"--config", conf}, "239.1.2.3:7950"},
	} {
		cfg, err := agentSettings(t, tc.args...)
		if err != nil || cfg.StrobeMulticast != tc.want {
			t.Errorf("%v: multicast %q (%v), want %q", tc.args, cfg.StrobeMulticast, err, tc.want)
		}
	}
	for _, bad := range []string{"10.0.0.1:7950", "239.1.2.3", "239.1.2.3:0", "[ff02::1]:7950", "group"} {
		if _, err := agentSettings(t, "--strobe-multicast", bad); err == nil || !strings.Contains(err.Error(), "--strobe-multicast") {
			t.Errorf("--strobe-multicast %s: %v", bad, err)
		}
	}
}

// --strobe-fanout (or strobe_fanout in the config file) reaches the
// agent's configuration; out of range it is refused by name.
func TestAgentStrobeFanout(t *testing.T) {
	conf := writeFile(t, "agent.toml", "controller = true\nstrobe_fanout = 8\n")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"--controller", "--strobe-fanout", "16"}, 16},
		{[]string{"--config", conf}, 8},
		{[]string{"--config", conf, "--strobe-fanout", "4"}, 4},
	} {
		cfg, err := agentSettings(t, tc.args...)
		if err != nil || cfg.StrobeFanout != tc.want {
			t.Errorf("%v: fanout %d (%v), want %d", tc.args, cfg.StrobeFanout, err, tc.want)
		}
	}
	for _, bad := range []string{"-1", "256"} {
		if _, err := agentSettings(t, "--strobe-fanout", bad); err == nil || !strings.Contains(err.Error(), "--strobe-fanout "+bad) {
			t.Errorf("--strobe-fanout %s: %v", bad, err)
		}
	}
}

// A --config file sets what the command line does not; every flag given,
// lists included, wins over it.
func TestAgentConfigFileUnderFlags(t *testing.T) {
	conf := writeFile(t, "agent.toml", "name = \"fromfile\"\nbind = \"127.0.0.1:7000\"\njoin = [\"10.0.0.1:7946\"]\nmpl = 2\n")
	cfg, err := agentSettings(t, "--config", conf)
	if err != nil || cfg.Name != "n0" || cfg.Bind != "127.0.0.1:7000" || !reflect.DeepEqual(cfg.Join, []string{"10.0.0.1:7946"}) || cfg.MPL != 2 {
		t.Errorf("file: %+v, %v", cfg, err)
	}
	cfg, err = agentSettings(t, "--config", conf, "--join", "a:1,b:2", "--mpl", "4")
	if err != nil || !reflect.DeepEqual(cfg.Join, []string{"a:1", "b:2"}) || cfg.MPL != 4 || cfg.Bind != "127.0.0.1:7000" {
		t.Errorf("flags over the file: %+v, %v", cfg, err)
	}
}

// cosched's MPI library: --mpi cosched as the cluster's default, and
// where the agent finds the library (--mpi-lib, TOML mpi_lib).
func TestAgentMPICosched(t *testing.T) {
	conf := writeFile(t, "agent.toml", "mpi = \"cosched\"\nmpi_lib = \"/opt/cosched/lib\"\n")
	cfg, err := agentSettings(t, "--config", conf)
	if err != nil || cfg.MPI != "cosched" || cfg.MPILib != "/opt/cosched/lib" {
		t.Errorf("file: MPI %q MPILib %q, %v", cfg.MPI, cfg.MPILib, err)
	}
	if cfg, err = agentSettings(t, "--config", conf, "--mpi-lib", "/elsewhere"); err != nil || cfg.MPILib != "/elsewhere" {
		t.Errorf("--mpi-lib over the file: %q, %v", cfg.MPILib, err)
	}
	if _, err := agentSettings(t, "--mpi", "mpich"); err == nil || !strings.Contains(err.Error(), "--mpi") || !strings.Contains(err.Error(), "want none, pmi1, pmix or cosched") {
		t.Errorf("--mpi mpich: %v", err)
	}
}
