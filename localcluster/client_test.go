package localcluster

import (
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
