package workload

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/swf"
)

func TestWriteSWFRoundTrip(t *testing.T) {
	c := baseConfig(t)
	c.Jobs, c.Load, c.Seed = 3000, 0.8, 9
	c.MemoryMean, c.MemoryMax = 200_000_000, 512<<20
	want := generate(t, c)
	g, err := NewGenerator(c)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := WriteSWF(&buf, g, c)
	if err != nil || n != c.Jobs {
		t.Fatalf("wrote %d jobs: %v", n, err)
	}

	rd, err := swf.NewReader(bytes.NewReader(buf.Bytes()), "gen.swf")
	if err != nil {
		t.Fatal(err)
	}
	h := rd.Header()
	if h.MaxProcs != 32 || h.MaxJobs != int64(c.Jobs) || h.MaxRecords != int64(c.Jobs) || h.Version != "2.2" {
		t.Errorf("header MaxProcs %d MaxJobs %d MaxRecords %d Version %q", h.MaxProcs, h.MaxJobs, h.MaxRecords, h.Version)
	}
	note, _ := h.Get("Note")
	for _, s := range []string{"fitted to KTH-SP2-1996-2.swf", "load 0.8 on 32 processors", "seed 9", "mean runtime at load 1 30s", "mean 200000000 bytes, at most 536870912"} {
		if !strings.Contains(note, s) {
			t.Errorf("note lacks %q: %s", s, note)
		}
	}
	tpls, err := jss.ReadTemplates(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(tpls) != 3 {
		t.Fatalf("templates %v", tpls)
	}
	for i, tp := range c.Templates {
		if tpls[i+1] != tp {
			t.Errorf("template %d: %v, want %v", i+1, tpls[i+1], tp)
		}
	}

	// Times print with at most nine decimals (nanoseconds), memory in whole KB.
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, ";") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if _, frac, ok := strings.Cut(f, "."); ok && len(frac) > 9 {
				t.Fatalf("field %s in %q", f, line)
			}
		}
	}

	for i := 0; ; i++ {
		rec, err := rd.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("%d job lines, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		j := want[i]
		f := rec.Fields()
		exe := -1.0
		for k, tp := range c.Templates {
			if tp.String() == j.Template {
				exe = float64(k + 1)
			}
		}
		sec := func(d time.Duration) float64 { return float64(d) / 1e9 }
		wantF := [swf.NumFields]float64{float64(j.Number), sec(j.Submit), -1, sec(j.Runtime), float64(j.Processors), -1, -1,
			float64(j.Processors), sec(j.Estimate), float64(j.Memory / 1024), 1, -1, -1, exe, -1, -1, -1, -1}
		if f != wantF {
			t.Fatalf("line %d:\n got %v\nwant %v", rec.Line, f, wantF)
		}
	}

	// Read back as a simulator source, the jobs are the generated ones,
	// templates included (the header's Template lines and field 14).
	rd, err = swf.NewReader(bytes.NewReader(buf.Bytes()), "gen.swf")
	if err != nil {
		t.Fatal(err)
	}
	src, err := jss.NewSWFSource(rd, jss.SWFSourceOptions{Name: "gen.swf", Processors: 32, Conventions: jss.DefaultConventions()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		j, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if d := j.Submit - w.Submit; d < -time.Nanosecond || d > time.Nanosecond {
			t.Fatalf("job %d: submit %v, want %v", w.Number, j.Submit, w.Submit)
		}
		j.Submit = w.Submit
		if j != w {
			t.Fatalf("job %d:\n got %+v\nwant %+v", w.Number, j, w)
		}
	}
}

func TestWriteSWFWithoutTemplatesOrMemory(t *testing.T) {
	c := baseConfig(t)
	c.Jobs, c.Templates, c.MeanRuntime = 10, nil, 0
	g, err := NewGenerator(c)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := WriteSWF(&buf, g, c); err != nil {
		t.Fatal(err)
	}
	rd, err := swf.NewReader(&buf, "gen.swf")
	if err != nil {
		t.Fatal(err)
	}
	if tpls, err := jss.ReadTemplates(rd.Header()); err != nil || len(tpls) != 0 {
		t.Errorf("templates %v, %v", tpls, err)
	}
	note, _ := rd.Header().Get("Note")
	if !strings.Contains(note, "the model's own time scale") || !strings.Contains(note, "no memory requirement") {
		t.Errorf("note %q", note)
	}
	rec, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Executable != -1 || rec.RequestedMemory != -1 {
		t.Errorf("record %+v", rec)
	}
}

func TestWriteSWFUnknownTemplate(t *testing.T) {
	jobs := []jss.Job{{Number: 4, Runtime: time.Second}}
	jobs[0].Processors = 1
	jobs[0].Template = "50ms,25ms,news,NB"
	_, err := WriteSWF(io.Discard, jss.SliceSource(jobs), Config{Jobs: 1, Processors: 1})
	if err == nil || !strings.Contains(err.Error(), `job 4: template "50ms,25ms,news,NB" is not among the header's templates`) {
		t.Errorf("err %v", err)
	}
}

func TestReadTemplatesErrors(t *testing.T) {
	h := &swf.Header{Fields: []swf.HeaderField{
		{Key: "Template", Value: "1 50ms,25ms,news,NB"},
		{Key: "Note", Value: "not a template"},
		{Key: "template", Value: "2 100,50,barrier,nb"}, // keys are case-insensitive; bare numbers are ms
		{Key: "Template", Value: "3"},
		{Key: "Template", Value: "zero 50ms,25ms,news,NB"},
		{Key: "Template", Value: "4 50ms,25ms,ring,NB"},
		{Key: "Template", Value: "1 200ms,100ms,news,NB"},
	}}
	_, err := jss.ReadTemplates(h)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`header "; Template: 3": want "Template: <k> <template>"`,
		`header "; Template: zero 50ms,25ms,news,NB": template index "zero"`,
		`header "; Template: 4 50ms,25ms,ring,NB": bench: template "50ms,25ms,ring,NB": unknown pattern "ring"`,
		`header "; Template: 1 200ms,100ms,news,NB": template 1 is defined twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	h.Fields = h.Fields[:3]
	got, err := jss.ReadTemplates(h)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]bench.Template{
		1: {Grain: 50 * time.Millisecond, Imbalance: 25 * time.Millisecond, Pattern: bench.News, Sync: bench.NonBlocking},
		2: {Grain: 100 * time.Millisecond, Imbalance: 50 * time.Millisecond, Pattern: bench.Barrier, Sync: bench.NonBlocking},
	}
	if len(got) != 2 || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("templates %v", got)
	}
}
