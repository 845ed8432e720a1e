package localcluster

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// An unreadable COSCHED_KEY_FILE is an error naming it; without any
// credential the client is still made (the agent says what it wants).
func TestClientForAddrs(t *testing.T) {
	t.Setenv("COSCHED_SOCKET", "")
	t.Setenv("COSCHED_KEY_FILE", filepath.Join(t.TempDir(), "missing.key"))
	if _, err := ClientForAddrs([]string{"127.0.0.1:1"}, ""); err == nil || !strings.HasPrefix(err.Error(), "COSCHED_KEY_FILE: ") {
		t.Fatalf("missing key file: %v", err)
	}
	t.Setenv("COSCHED_KEY_FILE", "")
	if c, err := ClientForAddrs([]string{"127.0.0.1:1", "127.0.0.1:2"}, t.TempDir()); err != nil || c == nil {
		t.Fatalf("no credential: %v, %v", c, err)
	}
}

// Client takes a comma-separated list (an empty entry is named), else
// COSCHED_ADDR, else the local cluster of the state directory, and says
// ErrNoCluster when there is none.
func TestClient(t *testing.T) {
	t.Setenv("COSCHED_SOCKET", "")
	t.Setenv("COSCHED_KEY_FILE", "")
	t.Setenv("COSCHED_ADDR", "")
	if _, err := Client("127.0.0.1:1, ,127.0.0.1:2", ""); err == nil || err.Error() != `Addrs "127.0.0.1:1, ,127.0.0.1:2": empty address in the list` {
		t.Errorf("empty entry: %v", err)
	}
	if c, err := Client("127.0.0.1:1, 127.0.0.1:2", t.TempDir()); err != nil || c == nil {
		t.Errorf("list: %v, %v", c, err)
	}
	if _, err := Client("", t.TempDir()); !errors.Is(err, ErrNoCluster) {
		t.Errorf("no cluster: %v", err)
	}
	t.Setenv("COSCHED_ADDR", "127.0.0.1:1")
	if c, err := Client("", t.TempDir()); err != nil || c == nil {
		t.Errorf("COSCHED_ADDR: %v, %v", c, err)
	}
}
