package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The merged view prints every rank's lines in rank order (ranks 2 and 10
// sort numerically), labelled as srun --label does, across agents.
func TestOutputLabel(t *testing.T) {
	dir := t.TempDir()
	write := func(agent, name, body string) {
		d := filepath.Join(dir, "agents", agent, "jobs", "7")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("n0", "rank-0.out", "hello from 0\nbye\n")
	write("n1", "rank-10.out", "ten")
	write("n1", "rank-2.out", "two\n")
	write("n1", "rank-2.err", "oops\n")
	var b bytes.Buffer
	if err := WriteJobOutput(&b, dir, 7, "out", true); err != nil {
		t.Fatal(err)
	}
	if want := "0: hello from 0\n0: bye\n2: two\n10: ten\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := WriteJobOutput(&b, dir, 7, "err", false); err != nil || b.String() != "oops\n" {
		t.Errorf("--err: %q %v", b.String(), err)
	}
	if err := WriteJobOutput(&b, dir, 8, "out", true); err == nil || !strings.Contains(err.Error(), "no rank output") {
		t.Errorf("unknown job: %v", err)
	}
}
