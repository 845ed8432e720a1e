package node_test

import (
	"slices"
	"testing"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/node"
)

// The agent's text settings: CPU lists, gossip keys and the logger's
// level and format; a bad one is refused (the logger's keyed by field).
func TestSettings(t *testing.T) {
	cpus, err := node.ParseCPUList("0-3, 8,2,10-11")
	if want := []int{0, 1, 2, 3, 8, 10, 11}; err != nil || !slices.Equal(cpus, want) {
		t.Errorf("cpus %v, %v; want %v", cpus, err, want)
	}
	for _, bad := range []string{"", "3-1", "a", "-1"} {
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
