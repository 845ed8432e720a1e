package workload

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
)

func goodSettings() Settings {
	return Settings{Config: Config{Processors: 32, Jobs: 50, Load: 0.8, MeanRuntime: 30 * time.Second, Seed: 1},
		Workload: "w3", MemMean: "256MB", MemPerProc: "512MiB"}
}

func TestSettingsParse(t *testing.T) {
	c, err := goodSettings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Templates) != 3 || c.MemoryMean != 256e6 || c.MemoryMax != 512<<20 || c.Model.Source != Builtin().Source {
		t.Errorf("config %+v", c)
	}
	s := goodSettings()
	s.Workload = "NONE"
	if c, err := s.Parse(); err != nil || len(c.Templates) != 0 {
		t.Errorf("no templates: %v, %d templates", err, len(c.Templates))
	}
}

// Every problem is keyed by Config's field; the memory sizes as written.
func TestSettingsParseKeysEveryProblem(t *testing.T) {
	for _, c := range []struct {
		edit func(*Settings)
		want []string
	}{
		{func(s *Settings) { s.Workload, s.Jobs, s.MemMean = "w9", 0, "1GB" }, []string{
			`Workload "w9": unknown workload (valid: w0, w1, w2, w3, w4, none)`, "Jobs 0: must be from 1 to 10000000",
			"MemoryMean 1GB: no room: more than MemoryMax 512MiB, a processor's memory"}},
		{func(s *Settings) { s.MemMean, s.MemPerProc = "lots", "12XB" }, []string{
			`MemoryMean "lots": not a memory size (e.g. 256MB, 1GiB, 0)`, `MemoryMax "12XB": not a memory size (e.g. 256MB, 1GiB, 0)`}},
	} {
		s := goodSettings()
		c.edit(&s)
		_, err := s.Parse()
		var got []string
		for _, e := range fielderr.All(err) {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("errors:\n%q\nwant\n%q", got, c.want)
		}
	}
}

// GenerateFile writes what Generate writes, and leaves no file when
// cancelled.
func TestGenerateFile(t *testing.T) {
	c, err := goodSettings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if n, err := Generate(context.Background(), &want, c); err != nil || n != c.Jobs {
		t.Fatalf("Generate: %d jobs, %v", n, err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "w.swf")
	if n, err := GenerateFile(context.Background(), path, c); err != nil || n != c.Jobs {
		t.Fatalf("GenerateFile: %d jobs, %v", n, err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the file differs from Generate's output (%v)", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := GenerateFile(ctx, filepath.Join(dir, "x.swf"), c); err == nil {
		t.Error("a cancelled GenerateFile succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
}

// FitInput fits a trace from a file or standard input, named as a model
// source should be.
func TestFitInput(t *testing.T) {
	c, err := goodSettings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	c.Jobs = 2000
	var trace bytes.Buffer
	if _, err := Generate(context.Background(), &trace, c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gen.swf")
	if err := os.WriteFile(path, trace.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := FitInput(context.Background(), path, nil, 0)
	if err != nil || m.Source != "gen.swf" || m.Processors != 32 {
		t.Errorf("file: source %q, %d processors, %v", m.Source, m.Processors, err)
	}
	m, err = FitInput(context.Background(), "-", bytes.NewReader(trace.Bytes()), 20)
	if err != nil || m.Source != "<stdin>" || m.Processors != 20 {
		t.Errorf("stdin: source %q, %d processors, %v", m.Source, m.Processors, err)
	}
	var js, table strings.Builder
	if err := m.Write(&js, "json"); err != nil || !strings.Contains(js.String(), `"source": "<stdin>"`) {
		t.Errorf("json: %v\n%s", err, js.String())
	}
	if err := m.Write(&table, "table"); err != nil || !strings.HasPrefix(table.String(), "Workload model of <stdin> (20 processors)") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
	if err := m.Write(&table, "xml"); err == nil {
		t.Error("format xml accepted")
	}
}

func TestFitSettingsValidate(t *testing.T) {
	if err := (FitSettings{Trace: "-", Format: "table"}).Validate(); err != nil {
		t.Errorf("good settings: %v", err)
	}
	var got []string
	for _, e := range fielderr.All(FitSettings{Processors: -1, Format: "xml"}.Validate()) {
		got = append(got, e.Error())
	}
	want := []string{"Trace: required: the SWF trace to fit", "Processors -1: must be from 1 to 1048576", `Format "xml": want json or table`}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%q\nwant\n%q", got, want)
	}
}
