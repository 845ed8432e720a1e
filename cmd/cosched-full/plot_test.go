package main

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSimPlotEndToEnd(t *testing.T) {
	runs, figs := t.TempDir(), filepath.Join(t.TempDir(), "figs")
	if code, _, errOut := sim(t, tiny(runs, "--slice", "10ms,50ms", "--shard", "1/2")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := sim(t, tiny(runs, "--slice", "10ms,50ms", "--shard", "2/2")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// A directory of shards is merged on the fly.
	code, out, errOut := sim(t, "plot", "--in", runs, "--out", figs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var names []string
	for _, stem := range []string{
		"response_vs_slice_w3_load0.4", "response_vs_slice_w3_load0.8",
		"response_vs_load_w3_mpl2_slice10ms", "wait_vs_load_w3_mpl2_slice10ms", "exec_slowdown_vs_load_w3_mpl2_slice10ms", "processor_util_vs_load_w3_mpl2_slice10ms",
		"response_vs_load_w3_mpl2_slice50ms", "wait_vs_load_w3_mpl2_slice50ms", "exec_slowdown_vs_load_w3_mpl2_slice50ms", "processor_util_vs_load_w3_mpl2_slice50ms",
	} {
		names = append(names, stem+".png", stem+".svg")
	}
	var want strings.Builder
	for _, n := range names {
		want.WriteString("wrote " + filepath.Join(figs, n) + "\n")
	}
	if out != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want.String())
	}
	entries, err := os.ReadDir(figs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("files %v, want %v", got, names)
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(figs, n))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(n, ".png") {
			if img, err := png.Decode(bytes.NewReader(data)); err != nil || img.Bounds().Dx() < 500 {
				t.Errorf("%s: not a PNG figure: %v", n, err)
			}
			continue
		}
		dec := xml.NewDecoder(bytes.NewReader(data))
		root, title := "", false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if root == "" {
					root = tok.Name.Local
				}
			case xml.CharData:
				title = title || strings.Contains(string(tok), " vs ")
			}
		}
		if root != "svg" || !title {
			t.Errorf("%s: root %q, title %v", n, root, title)
		}
	}

	// The same input again gives the same bytes.
	again := t.TempDir()
	if code, _, errOut := sim(t, "plot", "--in", runs, "--out", again, "--format", "svg"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".svg") {
			a, _ := os.ReadFile(filepath.Join(figs, n))
			b, _ := os.ReadFile(filepath.Join(again, n))
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs between two runs", n)
			}
		}
	}
}

func TestSimPlotSaysWhatItSkips(t *testing.T) {
	runs, figs := t.TempDir(), t.TempDir()
	if code, _, errOut := sim(t, "sweep", "--jobs", "10", "--load", "0.8", "--out", runs); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := sim(t, "plot", "--in", filepath.Join(runs, "results.json"), "--out", figs, "--format", "png")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"skipped response_vs_slice_w3_load0.8: one time slice (50ms); a line needs at least 2",
		"skipped response_vs_load_w3_mpl3: one load (0.8); a line needs at least 2",
		"skipped processor_util_vs_load_w3_mpl3: one load (0.8); a line needs at least 2",
		"no figure drawn",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(figs); len(entries) != 0 {
		t.Errorf("%d files written", len(entries))
	}
}

func TestSimPlotBadFlags(t *testing.T) {
	code, _, errOut := sim(t, "plot", "--format", "png,gif")
	if code != 2 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"3 problems", "--in: required", "--out: required", `--format "gif": unknown format (valid: png, svg)`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	empty := t.TempDir()
	if code, _, errOut := sim(t, "plot", "--in", empty, "--out", t.TempDir()); code != 1 || !strings.Contains(errOut, "no results.json") {
		t.Errorf("empty directory: exit %d: %s", code, errOut)
	}
	if code, _, errOut := sim(t, "plot", "--in", filepath.Join(empty, "none.json"), "--out", t.TempDir()); code != 1 || !strings.Contains(errOut, "--in: ") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
}
