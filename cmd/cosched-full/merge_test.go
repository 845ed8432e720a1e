package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimMergeShardsGiveTheUnshardedFiles(t *testing.T) {
	whole, shards, merged := t.TempDir(), t.TempDir(), t.TempDir()
	args := []string{"--mode", "space,gang,bcs", "--mpl", "1,2", "--slice", "10ms,50ms", "--load", "0.4,0.8"}
	if code, _, errOut := sim(t, tiny(whole, args...)...); code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, errOut)
	}
	for k := 1; k <= 3; k++ {
		code, out, errOut := sim(t, tiny(shards, append(args, "--shard", fmt.Sprintf("%d/3", k))...)...)
		if code != 0 {
			t.Fatalf("shard %d: exit %d: %s", k, code, errOut)
		}
		if name := fmt.Sprintf("shard-%d-of-3.json", k); !strings.Contains(out, filepath.Join(shards, name)) || !strings.Contains(errOut, fmt.Sprintf("shard %d/3: 6 of 18 points", k)) {
			t.Errorf("shard %d: stdout %q stderr %q", k, out, errOut)
		}
	}
	code, out, errOut := sim(t, "merge", "--out", merged, shards)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "wrote "+filepath.Join(merged, "results.json")+"\nwrote "+filepath.Join(merged, "results.csv")+"\n\n") {
		t.Errorf("merge stdout:\n%s", out)
	}
	for _, name := range []string{"results.json", "results.csv"} {
		want, _ := os.ReadFile(filepath.Join(whole, name))
		got, _ := os.ReadFile(filepath.Join(merged, name))
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("merged %s differs from the unsharded one", name)
		}
	}

	// One shard missing: exit 1, nothing written.
	missing := t.TempDir()
	code, _, errOut = sim(t, "merge", "--out", missing, filepath.Join(shards, "shard-1-of-3.json"), filepath.Join(shards, "shard-3-of-3.json"))
	if code != 1 || !strings.Contains(errOut, "cosched: merge: missing 1, 4, 7, 10, 13, 16 (no input holds shard 2/3)") {
		t.Errorf("missing shard: exit %d: %s", code, errOut)
	}
	if entries, _ := os.ReadDir(missing); len(entries) != 0 {
		t.Errorf("a failed merge wrote %d files", len(entries))
	}
	// The same shard twice.
	s1 := filepath.Join(shards, "shard-1-of-3.json")
	code, _, errOut = sim(t, "merge", "--out", missing, shards, s1)
	if code != 1 || !strings.Contains(errOut, "duplicated 0, 3, 6, 9, 12, 15: in "+s1+", "+s1) {
		t.Errorf("duplicated shard: exit %d: %s", code, errOut)
	}
	// A shard of another sweep.
	other := t.TempDir()
	if code, _, errOut := sim(t, tiny(other, append(args, "--shard", "2/3", "--seed", "2")...)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = sim(t, "merge", "--out", missing, s1, filepath.Join(other, "shard-2-of-3.json"), filepath.Join(shards, "shard-3-of-3.json"))
	if code != 1 || !strings.Contains(errOut, "its spec differs from "+s1+"'s: seeds [2], not [1]") {
		t.Errorf("mismatched spec: exit %d: %s", code, errOut)
	}
	// Usage errors.
	if code, _, errOut := sim(t, "merge", shards); code != 2 || !strings.Contains(errOut, "--out: required") {
		t.Errorf("no --out: exit %d: %s", code, errOut)
	}
	if code, _, errOut := sim(t, "merge", "--out", missing); code != 2 {
		t.Errorf("no input: exit %d: %s", code, errOut)
	}
}
