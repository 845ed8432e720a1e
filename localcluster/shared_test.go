package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cosched/cosched/node/rank/shim"
)

// A binary in a directory closed to other users is copied where they may
// run it, and the rank shim beside it too: the agents find their shim
// beside the binary they run, and would otherwise start every rank through
// the copy itself.
func TestSharedExeCopiesTheRankShim(t *testing.T) {
	closed := t.TempDir() // 0700
	exe := filepath.Join(closed, "bin", "cosched")
	sh := shim.Path(exe)
	for p, body := range map[string]string{exe: "#!/bin/sh\necho cosched\n", sh: "#!/bin/sh\necho shim\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state, err := os.MkdirTemp("", "cosched-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if c := closedToOthers(state, false); c != "" {
		t.Skipf("%s is closed to other users: no copy would be made", c)
	}
	got, note, err := sharedExe(exe, state)
	if err != nil || note != "" {
		t.Fatalf("sharedExe: %q, %q, %v", got, note, err)
	}
	if want := filepath.Join(state, "bin", "cosched"); got != want {
		t.Fatalf("sharedExe = %s, want %s", got, want)
	}
	copied, ok := shim.Installed(got)
	if !ok {
		t.Fatalf("no shim every user may run at %s", copied)
	}
	if b, err := os.ReadFile(copied); err != nil || string(b) != "#!/bin/sh\necho shim\n" {
		t.Errorf("%s holds %q, %v; want the shim", copied, b, err)
	}
}
