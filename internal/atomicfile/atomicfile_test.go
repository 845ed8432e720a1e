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

// A group publishes every file on Commit, and none when aborted.
func TestGroup(t *testing.T) {
	dir := t.TempDir()
	for _, commit := range []bool{false, true} {
		var g Group
		for _, name := range []string{"a.swf", "b.csv"} {
			f, err := g.Create(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte(name))
		}
		if commit {
			if err := g.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		g.Abort()
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		want := map[bool]string{false: "", true: "a.swf b.csv"}[commit]
		if got := strings.Join(names, " "); got != want {
			t.Errorf("commit %v: directory holds %q, want %q", commit, got, want)
		}
	}
}

// CheckDir creates a missing directory and refuses one that is a file.
func TestCheckDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	if err := CheckDir(dir); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the directory holds %v (%v); want it empty", entries, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(file); err == nil {
		t.Error("a file passed as a directory")
	}
}
