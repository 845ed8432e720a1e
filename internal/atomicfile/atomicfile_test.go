package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("before commit the old file must stay: %q", b)
	}
	f.Abort()
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("abort changed the file: %q", b)
	}
	if err := WriteFile(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("after commit: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// A file that cannot fit is refused before anything is written; one that
// fits passes.
func TestCheckSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.swf")
	if err := CheckSpace(path, 1); err != nil {
		t.Errorf("1 byte: %v", err)
	}
	if err := CheckSpace(path, 1<<62); err == nil || !strings.Contains(err.Error(), "the output needs about") {
		t.Errorf("4 EiB: %v, want the output refused", err)
	}
}
