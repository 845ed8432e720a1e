package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The shared traces, with the job counts from /work/shared/traces/README.md.
func TestTraces(t *testing.T) {
	traces := []struct {
		file     string
		jobs     int
		maxProcs int64
	}{
		{"KTH-SP2-1996-2.swf", 28489, 100},
		{"LLNL-Atlas-2006-2.1-cln.swf", 43778, 9216},
		{"NASA-iPSC-1993-3.1-cln.swf.gz", 18239, 128},
		{"lublin_256.swf", 10000, 0},
	}
	for _, tr := range traces {
		t.Run(tr.file, func(t *testing.T) {
			path := tracePath(t, tr.file)
			r, c, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			recs, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			h := r.Header()
			if len(recs) != tr.jobs {
				t.Fatalf("%d records, want %d", len(recs), tr.jobs)
			}
			// The header's MaxJobs counts the jobs of the raw log, so a
			// cleaned log has at most that many.
			if h.MaxJobs < int64(len(recs)) {
				t.Errorf("%d records but MaxJobs %d", len(recs), h.MaxJobs)
			}
			if h.MaxProcs != tr.maxProcs {
				t.Errorf("MaxProcs %d, want %d", h.MaxProcs, tr.maxProcs)
			}
			for _, rec := range recs {
				if rec.AllocatedProcessors == 0 || rec.Line == 0 {
					t.Fatalf("implausible record %+v", rec)
				}
			}

			r2, got := roundTrip(t, h, recs)
			checkSame(t, recs, got)
			if !reflect.DeepEqual(*r2.Header(), *h) {
				t.Fatalf("header changed in the round trip:\n got %+v\nwant %+v", *r2.Header(), *h)
			}
		})
	}
}

func TestTraceKTHHeader(t *testing.T) {
	r, c, err := Open(tracePath(t, "KTH-SP2-1996-2.swf"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := r.Header()
	if h.UnixStartTime != 843480031 || h.TimeZone != 3600 || h.MaxNodes != 100 || h.MaxRecords != 28490 ||
		h.Version != "2.2" || h.Computer != "IBM SP2" || h.EndTime != "Fri Aug 29 10:55:01 CEST 1997" ||
		h.TimeZoneString != "Europe/Stockholm" || h.Preemption != "No" {
		t.Errorf("typed header %+v", *h)
	}
	if v, _ := h.Get("Information"); v != "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/" {
		t.Errorf("Information %q", v)
	}
	first, err := r.Next()
	if err != nil || first.Line != 20 || first.RunTime != 97225 || first.RequestedTime != 210000 {
		t.Errorf("first record %+v, %v", first, err)
	}
}

// The Writer's alignment is the archive's: KTH job lines come out byte for byte.
func TestTraceKTHJobLinesVerbatim(t *testing.T) {
	data, err := os.ReadFile(tracePath(t, "KTH-SP2-1996-2.swf"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data), "KTH")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var orig []string
	for l := range strings.Lines(string(data)) {
		if !strings.HasPrefix(l, ";") {
			orig = append(orig, l)
		}
	}
	written := strings.SplitAfter(out.String(), "\n")
	for i, l := range orig {
		if written[i] != l {
			t.Fatalf("line %d:\n got %q\nwant %q", recs[i].Line, written[i], l)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	content := "; MaxProcs: 4\n" + job + job
	plain := filepath.Join(dir, "plain.swf")
	if err := os.WriteFile(plain, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// Gzip under a name without .gz: detection is by magic bytes.
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(content))
	zw.Close()
	zipped := filepath.Join(dir, "zipped.swf")
	if err := os.WriteFile(zipped, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.swf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, zipped} {
		r, c, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(r)
		if err != nil || len(recs) != 2 || r.Header().MaxProcs != 4 {
			t.Fatalf("%s: %d records, %v", p, len(recs), err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r, c, err := Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := readAll(r); err != nil || len(recs) != 0 {
		t.Fatalf("empty file: %d records, %v", len(recs), err)
	}
	c.Close()

	if _, _, err := Open(filepath.Join(dir, "missing.swf")); !errors.Is(err, fs.ErrNotExist) ||
		!strings.HasPrefix(err.Error(), "swf: open ") {
		t.Fatalf("missing file: %v", err)
	}

	// A truncated gzip stream is an error, not a short file.
	trunc := filepath.Join(dir, "trunc.swf.gz")
	if err := os.WriteFile(trunc, zb.Bytes()[:zb.Len()-6], 0o644); err != nil {
		t.Fatal(err)
	}
	r, c, err = Open(trunc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := readAll(r); err == nil || !strings.HasPrefix(err.Error(), "swf: read "+trunc+": ") {
		t.Fatalf("truncated gzip: %v", err)
	}

	// A header error closes the file and reports the path.
	bad := filepath.Join(dir, "bad.swf")
	if err := os.WriteFile(bad, []byte("; MaxProcs: x\n"+job), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(bad); err == nil || err.Error() != bad+`:1: header MaxProcs: "x": not an integer` {
		t.Fatalf("bad header: %v", err)
	}
	if r, c, err := Open(bad, WithLenient()); err != nil || r.Header().MaxProcs != 0 || r.Skipped() != 1 {
		t.Fatalf("bad header, lenient: %v", err)
	} else {
		c.Close()
	}
}
