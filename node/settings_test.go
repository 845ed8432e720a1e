package node_test

import (
	"slices"
	"testing"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// The agent's text settings: CPU lists, gossip keys and the logger's
// level and format; a bad one is refused (the logger's keyed by field).
func TestSettings(t *testing.T) {
	cpus, err := node.ParseCPUList("0-3, 8,2,10-11")
	if want := []int{0, 1, 2, 3, 8, 10, 11}; err != nil || !slices.Equal(cpus, want) {
		t.Errorf("cpus %v, %v; want %v", cpus, err, want)
	}
	for _, bad := range []string{"", "3-1", "a", "-1", "0-1000000000000", "99999999"} {
		if _, err := node.ParseCPUList(bad); err == nil {
			t.Errorf("CPU list %q accepted", bad)
		}
	}
	if k, err := node.ParseSecretKey("000102030405060708090a0b0c0d0e0f"); err != nil || len(k) != 16 || k[15] != 15 {
		t.Errorf("key %v, %v", k, err)
	}
	for _, bad := range []string{"0", "zz", "0001"} {
		if _, err := node.ParseSecretKey(bad); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	if _, err := node.NewLogger("info", "json"); err != nil {
		t.Error(err)
	}
	_, err = node.NewLogger("loud", "json")
	if fs := fielderr.All(err); len(fs) != 1 || fs[0].Field != "LogLevel" {
		t.Errorf("bad level: %v", err)
	}
	_, err = node.NewLogger("info", "xml")
	if fs := fielderr.All(err); len(fs) != 1 || fs[0].Field != "LogFormat" {
		t.Errorf("bad format: %v", err)
	}
}

// An agent's text settings: the defaults make a valid configuration; a
// space-mode controller's MPL is 1 unless given; every bad setting is
// keyed by its field, once (Validate's word on a field that did not
// parse is left out), and a non-controller's MPL is range-checked too.
func TestSettingsConfig(t *testing.T) {
	s := node.DefaultSettings()
	s.Name, s.Controller, s.Mode = "n0", true, "space"
	c, err := s.Config(t.TempDir(), nil)
	if err != nil || c.MPL != 1 || c.Mode != "space" || c.MemReserve != 512<<20 || c.ControllerGrace.Minutes() != 5 || c.Log == nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	_, err = s.Config(t.TempDir(), func(f string) bool { return f == "MPL" })
	if fs := fielderr.All(err); len(fs) != 1 || fs[0].Field != "MPL" {
		t.Errorf("space with MPL 3 given: %v", err)
	}
	for v, nodeOnly := range map[string]bool{"": false, "all": false, "node": true} {
		s = node.DefaultSettings()
		s.Name, s.MPIChannels = "n0", v
		if c, err := s.Config(t.TempDir(), nil); err != nil || c.NodeChannelsOnly != nodeOnly {
			t.Errorf("mpi_channels %q: node-only %v, %v", v, c.NodeChannelsOnly, err)
		}
	}
	s.MPIChannels = "tcp"
	_, err = s.Config(t.TempDir(), nil)
	if fs := fielderr.All(err); len(fs) != 1 || fs[0].Field != "MPIChannels" {
		t.Errorf("mpi_channels tcp: %v", err)
	}
	s = node.DefaultSettings()
	s.Name, s.MPL, s.Slice, s.Policy, s.Cgroups, s.Nice, s.Reservations = "n0", 0, "soon", "nope", "v9", 30, "0"
	_, err = s.Config(t.TempDir(), nil)
	var fields []string
	for _, e := range fielderr.All(err) {
		fields = append(fields, e.Field)
	}
	if want := []string{"Slice", "Policy", "Reservations", "MPL", "Cgroups", "Nice"}; !slices.Equal(fields, want) {
		t.Errorf("fields %v, want %v (%v)", fields, want, err)
	}
}

// The agent command adds a P per goroutine that holds one for its life
// (raw waits): without real-time priority the strobe sockets are ordinary
// ones, and only a time-shared controller runs the slice clock.
func TestHeldProcessors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  node.Config
		want int
	}{
		{"plain agent", node.Config{KeepProcessors: true, Priority: 50}, 1},
		{"not kept (several agents in one process)", node.Config{Priority: 50, Controller: true, Mode: sharing.Gang}, 0},
		{"no real-time priority", node.Config{KeepProcessors: true, Priority: 0, StrobeMulticast: "239.1.1.1:9000"}, 0},
		{"multicast", node.Config{KeepProcessors: true, Priority: 50, StrobeMulticast: "239.1.1.1:9000"}, 2},
		{"gang controller", node.Config{KeepProcessors: true, Priority: 50, Controller: true, Mode: sharing.Gang}, 2},
		{"space controller", node.Config{KeepProcessors: true, Priority: 50, Controller: true, Mode: sharing.Space}, 1},
		{"controller, multicast, no priority", node.Config{KeepProcessors: true, Controller: true, Mode: sharing.BCS, StrobeMulticast: "239.1.1.1:9000"}, 1},
	} {
		if got := tc.cfg.HeldProcessors(); got != tc.want {
			t.Errorf("%s: HeldProcessors = %d, want %d", tc.name, got, tc.want)
		}
	}
}
