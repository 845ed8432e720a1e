package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With the flags bound onto the libraries' settings types, a
// bad flag is still refused and named by its flag.
func TestFlagsStillNamedAndRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		// -N 0 is no node count: refused with -n as without it.
		{[]string{"submit", "-N", "0", "-n", "2", "-t", "1", "--addr", "127.0.0.1:1", "--", "true"}, 2, "-N 0: must be from 1 to 1048576"},
		{[]string{"queue", "--addr", "127.0.0.1:1,,127.0.0.1:2"}, 2, `--addr "127.0.0.1:1,,127.0.0.1:2": empty address in the list`},
		{[]string{"sim", "gen", "--jobs", "5", "--out", filepath.Join(dir, "none", "x.swf")}, 1, "cosched: --out: "},
		// An unusable --out fails before the run, not after it.
		{[]string{"bench", "run", "--out", filepath.Join(file, "run")}, 1, "cosched: --out: "},
		{[]string{"bench", "calibrate", "--out", filepath.Join(file, "p.json")}, 1, "cosched: --out: "},
		// A mistyped flag gets the closest one, as cobra does for commands.
		{[]string{"submit", "--tiem", "5", "--", "true"}, 2, "unknown flag: --tiem (did you mean --time?)"},
		{[]string{"submit", "--chdr=/tmp", "--", "true"}, 2, "unknown flag: --chdr (did you mean --chdir?)"},
		{[]string{"sim", "--polcy", "easy"}, 2, "unknown flag: --polcy (did you mean --policy?)"},
		{[]string{"queue", "--al"}, 2, "unknown flag: --al (did you mean --all?)"},
		{[]string{"show", "x1"}, 2, `job id "x1": want a positive integer`},
	} {
		code, _, stderr := cosched(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "starting") {
			t.Errorf("%v: exit %d, %q; want exit %d, %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// sim plot names --out when the figures' directory cannot be made.
func TestSimPlotUnusableOut(t *testing.T) {
	runs, file := t.TempDir(), filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := sim(t, "sweep", "--jobs", "10", "--load", "0.5,0.8", "--out", runs); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errOut)
	}
	code, _, errOut := sim(t, "plot", "--in", runs, "--out", filepath.Join(file, "figs"))
	if code != 1 || !strings.HasPrefix(errOut, "cosched: --out: ") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

// A --speeds-file far larger than any list of speeds (here 64 MiB of
// zeros; /dev/zero had sim now allocate without bound) is refused after a
// bounded read, with a short error.
func TestSimNowHugeSpeedsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zeros")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 64<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	code, _, errOut := cosched(t, "", "sim", "now", "--speeds-file", path, "--jobs", "10")
	if code != 2 || len(errOut) > 1000 || !strings.Contains(errOut, "--speeds-file: "+path+": more than 16 MiB") {
		t.Errorf("exit %d, %d bytes: %.300q", code, len(errOut), errOut)
	}
}
