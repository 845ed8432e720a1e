package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/node"
)

// Validate names every bad field, and accepts the defaults.
func TestValidate(t *testing.T) {
	o := DefaultOptions()
	o.StateDir = t.TempDir()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o.Agents, o.Slice, o.MPL, o.Mode, o.Bandwidth, o.Processors = 0, time.Nanosecond, 3, node.Space, -1, MaxProcessors+1
	var fields []string
	for _, e := range fielderr.All(o.Validate()) {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, ","); got != "Agents,Processors,Slice,MPL,Bandwidth" {
		t.Fatalf("bad fields %s", got)
	}
}

// An agent that fails to start is reported with its own error line, not
// a pointer to its log; nothing is left recorded.
func TestUpReportsTheAgentsError(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-cosched")
	script := "#!/bin/sh\necho '{\"level\":\"info\",\"msg\":\"starting\"}'\necho 'cosched: --cpus: 99: no such CPU' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Exe, o.StateDir, o.Agents, o.Timeout = fake, filepath.Join(dir, "state"), 2, 10*time.Second
	// A previous cluster's failure in the same log is not this one's.
	os.MkdirAll(filepath.Join(o.StateDir, "agents", "a0"), 0o755)
	os.WriteFile(filepath.Join(o.StateDir, "agents", "a0", "agent.log"), []byte("cosched: an old failure\n"), 0o644)
	_, err := Up(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "agent a0 did not come up") || !strings.Contains(err.Error(), "--cpus: 99: no such CPU") ||
		strings.Contains(err.Error(), "old failure") {
		t.Fatalf("Up: %v", err)
	}
	if _, err := Load(o.StateDir); !os.IsNotExist(err) {
		t.Fatalf("a record was left: %v", err)
	}
}
