package swf

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadJobLines(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		in   string
		want []Record
	}{
		{
			name: "integers and unknowns",
			in:   "    1        0 964980  97225   56     -1    -1   56 210000    -1  1   1   1  -1 -1 -1 -1 -1\n",
			want: []Record{rec(1, 1, 0, 964980, 97225, 56, -1, -1, 56, 210000, -1, 1, 1, 1)},
		},
		{
			name: "fractional, exponent, signs and negative zero",
			in:   "1 12.5 0.25 -1 3 1e3 2.5E-1 +4 -0 .5 1. -2.75 13 14 15 16 17 123456789012345678\n",
			want: []Record{rec(1, 1, 12.5, 0.25, -1, 3, 1000, 0.25, 4, negZero, 0.5, 1, -2.75, 13, 14, 15, 16, 17, 123456789012345678)},
		},
		{
			name: "CRLF, tabs, blank and whitespace-only lines",
			in:   "\r\n1\t2\t3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\r\n   \r\n\t\n2 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18  \r\n",
			want: []Record{
				rec(2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18),
				rec(5, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18),
			},
		},
		{
			name: "comments between jobs",
			in:   "; Version: 2\n" + job + "; Note: between\n;\n  ; indented comment\n" + job,
			want: []Record{rec(2, 1, 0, 10, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1), rec(6, 1, 0, 10, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1)},
		},
		{
			name: "missing trailing newline",
			in:   job + "2 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1",
			want: []Record{rec(1, 1, 0, 10, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1), rec(2, 2, 0, 10, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1)},
		},
		{
			name: "missing trailing newline after CR",
			in:   job + "2 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\r",
			want: []Record{rec(1, 1, 0, 10, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1), rec(2, 2, 0, 10, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1)},
		},
		{name: "empty input", in: ""},
		{name: "only comments and blanks", in: ";\n\n; Note: nothing\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := readString(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, tt.want, got)
			for i := range got {
				if got[i].Line != tt.want[i].Line {
					t.Errorf("record %d: Line = %d, want %d", i, got[i].Line, tt.want[i].Line)
				}
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	const good = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n"
	tests := []struct {
		name     string
		line     string
		msg      string
		field    int
		sentinel error
	}{
		{"17 fields", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", `x.swf:7: expected 18 fields, got 17`, 0, ErrFieldCount},
		{"19 fields", good[:len(good)-1] + " 19", `x.swf:7: expected 18 fields, got 19`, 0, ErrFieldCount},
		{"count beats junk", "abc def", `x.swf:7: expected 18 fields, got 2`, 0, ErrFieldCount},
		{"junk", "1 2 3 4 abc 6 7 8 9 10 11 12 13 14 15 16 17 18", `x.swf:7: field 5 (allocated processors): "abc": not a number`, 5, ErrNotNumber},
		{"first bad field is named", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 x y", `x.swf:7: field 17 (preceding job): "x": not a number`, 17, ErrNotNumber},
		{"trailing junk", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18x", `x.swf:7: field 18 (think time): "18x": not a number`, 18, ErrNotNumber},
		{"two dots", "1 2 3 4 5 6 7 8 1.2.3 10 11 12 13 14 15 16 17 18", `x.swf:7: field 9 (requested time): "1.2.3": not a number`, 9, ErrNotNumber},
		{"lone minus", "1 - 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", `x.swf:7: field 2 (submit time): "-": not a number`, 2, ErrNotNumber},
		{"hex float", "1 2 0x1p4 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", `x.swf:7: field 3 (wait time): "0x1p4": not a number`, 3, ErrNotNumber},
		{"underscore", "1 2 3 1_000 5 6 7 8 9 10 11 12 13 14 15 16 17 18", `x.swf:7: field 4 (run time): "1_000": not a number`, 4, ErrNotNumber},
		{"NaN", "1 2 3 NaN 5 6 7 8 9 10 11 12 13 14 15 16 17 18", `x.swf:7: field 4 (run time): "NaN": not a finite number`, 4, ErrNotFinite},
		{"Inf", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 -Inf", `x.swf:7: field 18 (think time): "-Inf": not a finite number`, 18, ErrNotFinite},
		{"infinity", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 +infinity", `x.swf:7: field 18 (think time): "+infinity": not a finite number`, 18, ErrNotFinite},
		{"overflow", "1 1e999 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", `x.swf:7: field 2 (submit time): "1e999": out of range`, 2, ErrOutOfRange},
		{"value truncated", "1 2 3 4 5 6 7 8 9 10 11 " + strings.Repeat("z", 100) + " 13 14 15 16 17 18",
			`x.swf:7: field 12 (user): "` + strings.Repeat("z", 40) + `": not a number`, 12, ErrNotNumber},
		{"over-long line", strings.Repeat("1 ", MaxLineLength/2+1), `x.swf:7: line longer than 1 MiB`, 0, ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Five lines before the bad one (header, blank, comment, two jobs)
			// check the line count; a good line after it checks recovery.
			in := "; Version: 2\n\n" + good + "; Note: n\n" + good + "\n" + tt.line + "\r\n" + good
			r, err := NewReader(strings.NewReader(in), "x.swf")
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := r.Next(); err != nil {
					t.Fatal(err)
				}
			}
			_, err = r.Next()
			if err == nil {
				t.Fatal("no error")
			}
			if len(err.Error()) > 200 {
				t.Fatalf("error message too long (%d bytes)", len(err.Error()))
			}
			if err.Error() != tt.msg {
				t.Errorf("error\n got %s\nwant %s", err, tt.msg)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
			pe := parseErr(t, err)
			if pe.File != "x.swf" || pe.Line != 7 || pe.Field != tt.field || len(pe.Value) > 40 {
				t.Errorf("got %+v", pe)
			}
			// Strict mode reports and moves on: the next line is still read.
			rec, err := r.Next()
			if err != nil || rec.Line != 8 || rec.JobNumber != 1 {
				t.Fatalf("after the error: %+v, %v", rec, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("want EOF, got %v", err)
			}

			// Lenient mode skips the same line and counts it.
			r, recs, err := readString(t, in, WithLenient())
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 3 || r.Skipped() != 1 || len(r.SkippedErrors()) != 1 ||
				r.SkippedErrors()[0].Error() != tt.msg {
				t.Fatalf("lenient: %d records, Skipped %d, errors %v", len(recs), r.Skipped(), r.SkippedErrors())
			}
		})
	}
}

func TestParseErrorWithoutFileName(t *testing.T) {
	r, err := NewReader(strings.NewReader("; MaxProcs: 4\n1 2\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil || err.Error() != "line 2: expected 18 fields, got 2" {
		t.Fatalf("got %v", err)
	}
}

// Input with no header whose first line is no job is not SWF, and the
// error says so (instead of a machine size or a field count later).
func TestNotSWF(t *testing.T) {
	for _, in := range []string{"hello world\n", "<html><body>\n", "\x7fELF\x02\x01\x01\x00\x00\n"} {
		_, err := NewReader(strings.NewReader(in), "x.txt")
		var pe *ParseError
		if !errors.Is(err, ErrNotSWF) || !errors.As(err, &pe) || pe.Line != 1 || !strings.HasPrefix(err.Error(), "x.txt:1: ") ||
			!strings.Contains(err.Error(), "not an SWF file") {
			t.Errorf("%q: %v", in, err)
		}
	}
	// A header, or a good first line, is SWF with a bad line later.
	for _, in := range []string{"; MaxProcs: 4\nhello\n", "1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\nhello\n"} {
		if _, err := NewReader(strings.NewReader(in), "x.swf"); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestValueTruncationKeepsUTF8(t *testing.T) {
	v := truncValue([]byte(strings.Repeat("a", 39) + "é" + "tail"))
	if v != strings.Repeat("a", 39) {
		t.Fatalf("got %q", v)
	}
}

func TestLenientCounting(t *testing.T) {
	var b strings.Builder
	b.WriteString("; MaxProcs: many\n")
	for i := range 30 {
		if i%2 == 0 {
			b.WriteString("1 2 3\n")
		} else {
			b.WriteString(job)
		}
	}
	b.WriteString(strings.Repeat("9", MaxLineLength+10) + "\n")
	b.WriteString(job)
	r, recs, err := readString(t, b.String(), WithLenient())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 16 {
		t.Errorf("got %d records, want 16", len(recs))
	}
	if r.Skipped() != 1+15+1 {
		t.Errorf("Skipped() = %d, want 17", r.Skipped())
	}
	errs := r.SkippedErrors()
	if len(errs) != 10 {
		t.Fatalf("SkippedErrors has %d entries, want the first 10", len(errs))
	}
	if want := `x.swf:1: header MaxProcs: "many": not an integer`; errs[0].Error() != want {
		t.Errorf("first skipped error %q, want %q", errs[0], want)
	}
	if want := "x.swf:2: expected 18 fields, got 3"; errs[1].Error() != want {
		t.Errorf("second skipped error %q, want %q", errs[1], want)
	}
	if recs[len(recs)-1].Line != 33 {
		t.Errorf("last record on line %d, want 33", recs[len(recs)-1].Line)
	}
	errs[0] = nil // the Reader must hand out a copy
	if r.SkippedErrors()[0] == nil {
		t.Error("SkippedErrors exposes internal state")
	}
}

func TestLongLines(t *testing.T) {
	// A line longer than the read buffer but within the limit is fine,
	// padded with blanks so that it still has 18 fields.
	wide := strings.Repeat(" ", 3*readBufferSize) + job
	_, recs, err := readString(t, job+wide+job)
	if err != nil || len(recs) != 3 || recs[1].Line != 2 || recs[2].Line != 3 {
		t.Fatalf("wide line: %d records, %v", len(recs), err)
	}
	// Exactly at the limit, with CRLF, is accepted.
	at := strings.Repeat(" ", MaxLineLength-len(job)+1) + strings.TrimSuffix(job, "\n") + "\r\n"
	if _, recs, err := readString(t, at); err != nil || len(recs) != 1 {
		t.Fatalf("line at limit: %d records, %v", len(recs), err)
	}
	// One byte over is rejected; a long comment line too.
	for _, in := range []string{" " + at, "; " + strings.Repeat("x", MaxLineLength) + "\n"} {
		r, err := NewReader(strings.NewReader(job+in+job), "x.swf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) || parseErr(t, err).Line != 2 {
			t.Fatalf("got %v, want line 2 too long", err)
		}
		if rec, err := r.Next(); err != nil || rec.Line != 3 {
			t.Fatalf("after long line: line %d, %v", rec.Line, err)
		}
	}
	// Over-long final line without a newline.
	r, recs, err := readString(t, job+strings.Repeat("7", 2*MaxLineLength), WithLenient())
	if err != nil || len(recs) != 1 || r.Skipped() != 1 {
		t.Fatalf("long last line: %d records, %d skipped, %v", len(recs), r.Skipped(), err)
	}
	// In the header block, an over-long comment fails NewReader (strict).
	if _, err := NewReader(strings.NewReader("; "+strings.Repeat("x", MaxLineLength)+"\n"+job), "x.swf"); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("long header comment: %v", err)
	}
}

// errAfter yields data and then fails with err.
type errAfter struct {
	data string
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if e.data == "" {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestReadIOErrors(t *testing.T) {
	boom := errors.New("boom")
	// Failing inside the job lines: records before the failure, then the
	// wrapped error, every time.
	r, err := NewReader(&errAfter{data: "; Note: x\n" + job + job + "1 2 3", err: boom}, "KTH.swf")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(r)
	if len(recs) != 2 || !errors.Is(err, boom) || err.Error() != "swf: read KTH.swf: boom" {
		t.Fatalf("got %d records, %v", len(recs), err)
	}
	if _, err2 := r.Next(); !errors.Is(err2, boom) {
		t.Fatalf("error not sticky: %v", err2)
	}
	// Failing inside the header: NewReader reports it.
	if _, err := NewReader(&errAfter{data: "; Note: x\n", err: boom}, "h.swf"); !errors.Is(err, boom) ||
		err.Error() != "swf: read h.swf: boom" {
		t.Fatalf("header read error: %v", err)
	}
	// Failing in the middle of an over-long line.
	r, err = NewReader(&errAfter{data: job + strings.Repeat("1", 2*readBufferSize), err: boom}, "l.swf", WithLenient())
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := readAll(r); len(recs) != 1 || !errors.Is(err, boom) {
		t.Fatalf("long line read error: %d records, %v", len(recs), err)
	}
	// A transient error is not retried: it is reported.
	_, err = NewReader(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(job+job))), "t.swf")
	if !errors.Is(err, iotest.ErrTimeout) || err.Error() != "swf: read t.swf: timeout" {
		t.Fatalf("timeout reader: %v", err)
	}
}

func TestOneByteReads(t *testing.T) {
	in := "; Note: a\n;       b\r\n" + job + "\r\n" + job
	r, err := NewReader(iotest.DataErrReader(iotest.OneByteReader(strings.NewReader(in))), "x.swf")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(r)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if v, _ := r.Header().Get("Note"); v != "a\nb" {
		t.Fatalf("Note = %q", v)
	}
}

func TestNextDoesNotAllocate(t *testing.T) {
	var b strings.Builder
	for range 2000 {
		b.WriteString("  12 3456.5 -1 100 64 -1 -1 64 3600 -1 1 7 2 -1 0 -1 -1 -1\n")
	}
	r, err := NewReader(strings.NewReader(b.String()), "x.swf")
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Next allocates %.1f times per record", allocs)
	}
}
