package swf

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestWriteRecordFormat(t *testing.T) {
	tests := []struct {
		rec  Record
		want string
	}{
		{ // KTH-SP2 line 20, byte for byte
			rec(0, 1, 0, 964980, 97225, 56, -1, -1, 56, 210000, -1, 1, 1, 1),
			"    1        0 964980  97225   56     -1    -1   56 210000    -1  1   1   1  -1 -1 -1 -1 -1\n",
		},
		{
			rec(0, 123456, 12.5, 0.1, -1, 1234567, 1e15, 1e20, 0, math.Copysign(0, -1), 1e-7),
			"123456     12.5    0.1     -1 1234567 1000000000000000 100000000000000000000    0     -0 0.0000001 -1  -1  -1  -1 -1 -1 -1 -1\n",
		},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.Write(&tt.rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tt.want {
			t.Errorf("got\n%q\nwant\n%q", buf.String(), tt.want)
		}
	}
}

func TestWriteHeaderFormat(t *testing.T) {
	h := &Header{Fields: []HeaderField{
		{"Version", "2.2"},
		{"Information", "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/"},
		{"Note", "  cleaned  \nfilters:\n  a=1\n\n   \n  b=2  "},
		{"", "free text"},
		{"", "more text\nand more"},
		{"Empty", ""},
	}}
	want := "; Version: 2.2\n" +
		"; Information: http://www.pdc.kth.se/\n" +
		";              http://www.cs.huji.ac.il/\n" +
		"; Note: cleaned\n" +
		";       filters:\n" +
		";         a=1\n" +
		";         b=2\n" +
		";\n" +
		"; free text\n" +
		"; more text\n" +
		"; and more\n" +
		"; Empty:\n" +
		";\n"
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	r, err := NewReader(&buf, "h")
	if err != nil {
		t.Fatal(err)
	}
	wantFields := []HeaderField{
		{"Version", "2.2"},
		{"Information", "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/"},
		{"Note", "cleaned\nfilters:\n  a=1\n  b=2"},
		{"", "free text"}, {"", "more text"}, {"", "and more"},
		{"Empty", ""},
	}
	if !reflect.DeepEqual(r.Header().Fields, wantFields) {
		t.Fatalf("read back %q\nwant %q", r.Header().Fields, wantFields)
	}

	buf.Reset()
	if err := NewWriter(&buf).WriteHeader(&Header{}); err != nil || buf.Len() != 0 {
		t.Fatalf("empty header wrote %q, %v", buf.String(), err)
	}
}

func TestWriteErrors(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, h := range []*Header{
		{Fields: []HeaderField{{"Version", "2"}, {"Bad Key", "v"}}},
		{Fields: []HeaderField{{"http://x", "v"}}},
		{Fields: []HeaderField{{"", "Looks: like a key"}}},
	} {
		if err := w.WriteHeader(h); err == nil || !strings.HasPrefix(err.Error(), "swf: write header: ") {
			t.Errorf("WriteHeader(%q) = %v, want an error", h.Fields, err)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := rec(0, 1, 2, 3, v)
		err := w.Write(&r)
		if err == nil || !strings.Contains(err.Error(), "swf: write: field 4 (run time)") {
			t.Errorf("Write(%v) = %v, want an error naming field 4", v, err)
		}
	}
	if err := w.Flush(); err != nil || buf.Len() != 0 {
		t.Fatalf("failed writes left output %q (%v)", buf.String(), err)
	}

	boom := errors.New("disk full")
	w = NewWriter(failWriter{boom})
	r := rec(0, 1)
	for range 1000 { // fill the buffer so the error surfaces in Write
		if err := w.Write(&r); err != nil {
			if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "swf: write: ") {
				t.Fatalf("got %v", err)
			}
			return
		}
	}
	t.Fatal("write error was swallowed")
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestRoundTripSynthetic(t *testing.T) {
	h := &Header{}
	for _, kv := range [][2]string{
		{"Version", "2.2"}, {"Computer", "Synthetic"}, {"MaxJobs", "7"}, {"MaxProcs", "512"},
		{"UnixStartTime", "1000000000"}, {"TimeZone", "-3600"}, {"Information", "http://a/\nhttp://b/"},
		{"Note", "first"},
	} {
		if err := h.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	h.Fields = append(h.Fields, HeaderField{"Note", "second\n  indented"}, HeaderField{"", "free"}, HeaderField{"Queue", "1 batch"})
	recs := []Record{
		rec(0, 1, 0, 5, 100, 64, 98.25, 1024, 64, 3600, 2048, 1, 3, 1, 7, 1, 1, -1, -1),
		rec(0, 2, 0.5, 1e-9, 1e300, 1, -1),
		rec(0, 3, 12.5, math.Copysign(0, -1), 0, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64),
		rec(0, 4, 9007199254740993, 123456789012345, 1234567890123456, 0.1+0.2, 1.0/3),
		rec(0, 5),
	}
	r, got := roundTrip(t, h, recs)
	checkSame(t, recs, got)
	// 15 header lines: 11 fields, a continuation for two of them, a blank
	// before the free text and the closing ";".
	for i, g := range got {
		if g.Line != 16+i {
			t.Errorf("record %d on line %d, want %d", i, g.Line, 16+i)
		}
	}
	if !reflect.DeepEqual(*r.Header(), *h) {
		t.Fatalf("header:\n got %+v\nwant %+v", *r.Header(), *h)
	}
	if r.Header().MaxProcs != 512 || r.Header().TimeZone != -3600 {
		t.Fatalf("typed values lost: %+v", *r.Header())
	}
}
