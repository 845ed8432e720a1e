package shim

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The agent starts ranks through lib/cosched/cosched-rank beside its bin
// directory (followed through a symbolic link to the binary, as
// /usr/local/bin/cosched → /opt/cosched/bin/cosched installs it) when
// every user may execute it; otherwise through its own __rank-exec.
func TestCommandFindsTheShimBesideTheBinary(t *testing.T) {
	root := t.TempDir()
	exe := filepath.Join(root, "bin", "cosched")
	sh := filepath.Join(root, "lib", "cosched", Name)
	for _, p := range []string{exe, sh} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "elsewhere", "cosched")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	self := []string{exe, "__rank-exec"}
	check := func(what string, want []string) {
		t.Helper()
		if got := Command(exe); !slices.Equal(got, want) {
			t.Errorf("%s: Command(%s) = %q, want %q", what, exe, got, want)
		}
	}
	check("no shim", self)
	if err := os.WriteFile(sh, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	check("a shim only its owner may run", self)
	if err := os.Chmod(sh, 0o755); err != nil {
		t.Fatal(err)
	}
	check("a shim", []string{sh})
	if got, want := Command(link), []string{sh}; !slices.Equal(got, want) {
		t.Errorf("through a symbolic link: Command(%s) = %q, want %q", link, got, want)
	}
	if err := os.Remove(sh); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sh, 0o755); err != nil {
		t.Fatal(err)
	}
	check("a directory in its place", self)
}
