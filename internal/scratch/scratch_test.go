package scratch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSweep: a directory is swept by the next New only when its maker is
// gone (its lock free: a lock held through another open file, as another
// process's is, keeps it), it was not kept, its lock file is this user's,
// and InUse does not claim it.
func TestSweep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const prefix = "cosched-test-scratch-"

	live, _, err := New(prefix, nil) // its maker lives: this test
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := New(prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.Keep(); err != nil {
		t.Fatal(err)
	}
	abandonedDir := ofDeadMaker(t, tmp, prefix)
	busyDir := ofDeadMaker(t, tmp, prefix) // a process of it still stops
	other := filepath.Join(tmp, prefix+"not-a-scratch")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	busy := true
	inUse := func(dir string) bool { return busy && dir == busyDir }

	d, swept, err := New(prefix, inUse)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	if want := []string{abandonedDir}; !slices.Equal(swept, want) {
		t.Fatalf("swept %q, want %q", swept, want)
	}
	if _, err := os.Stat(abandonedDir); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", abandonedDir, err)
	}
	for _, dir := range []string{live.Path(), kept.Path(), busyDir, other, d.Path()} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s should stay: %v", dir, err)
		}
	}

	busy = false // its last process ended
	if got := Sweep(tmp, prefix, inUse); !slices.Equal(got, []string{busyDir}) {
		t.Errorf("once not in use, swept %q, want %q", got, busyDir)
	}
	if err := live.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live.Path()); !os.IsNotExist(err) {
		t.Errorf("Remove left %s (%v)", live.Path(), err)
	}
}

// TestSweepSkipsOtherUsersLocks: a lock file another user made (in a
// directory that user owns, as a PMIx job's is) never gets root to
// remove the directory, nor does a symbolic link in its place.
func TestSweepSkipsOtherUsersLocks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a file to another user")
	}
	tmp := t.TempDir()
	const prefix = "cosched-test-scratch-"
	theirs := ofDeadMaker(t, tmp, prefix)
	if err := os.Chown(filepath.Join(theirs, lockName), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	linked := ofDeadMaker(t, tmp, prefix)
	target := filepath.Join(linked, "target")
	if err := os.Rename(filepath.Join(linked, lockName), target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(linked, lockName)); err != nil {
		t.Fatal(err)
	}
	if got := Sweep(tmp, prefix, nil); len(got) > 0 {
		t.Fatalf("swept %q", got)
	}
}

// ofDeadMaker is a directory as a killed maker leaves it: its lock file
// there, locked by no one.
func ofDeadMaker(t *testing.T, tmp, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp(tmp, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
