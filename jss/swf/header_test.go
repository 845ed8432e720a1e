package swf

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const job = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"

func TestHeader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		fields  []HeaderField // nil: not checked
		check   func(t *testing.T, h *Header)
		skipped int
		lenient bool
	}{
		{
			name: "typed keys",
			in: "; Version: 2.2\n; Computer: IBM SP2\n; Installation: KTH\n; MaxJobs: 28490\n; MaxRecords: 28491\n" +
				"; Preemption: No\n; UnixStartTime: 843480031\n; TimeZone: -28800\n; TimeZoneString: Europe/Stockholm\n" +
				"; StartTime: Mon Sep 23 14:00:31 CEST 1996\n; EndTime:   Fri Aug 29 10:55:01 CEST 1997\n" +
				"; MaxNodes: 100\n; MaxProcs: 128\n; MaxRuntime: 162754\n; MaxMemory: 65536\n;\n" + job,
			check: func(t *testing.T, h *Header) {
				want := Header{
					Fields:  h.Fields,
					MaxJobs: 28490, MaxRecords: 28491, MaxNodes: 100, MaxProcs: 128, MaxRuntime: 162754, MaxMemory: 65536,
					UnixStartTime: 843480031, TimeZone: -28800,
					Version: "2.2", Computer: "IBM SP2", Installation: "KTH", TimeZoneString: "Europe/Stockholm",
					StartTime: "Mon Sep 23 14:00:31 CEST 1996", EndTime: "Fri Aug 29 10:55:01 CEST 1997", Preemption: "No",
				}
				if !reflect.DeepEqual(*h, want) {
					t.Errorf("got %+v\nwant %+v", *h, want)
				}
				if len(h.Fields) != 15 {
					t.Errorf("got %d fields, want 15", len(h.Fields))
				}
			},
		},
		{
			name: "repeated keys keep order, first wins for Get and typed values",
			in:   "; Note: one\n; Partition: 1 pbatch\n; Note: two\n; Partition: 2 pdebug\n; MaxProcs: 8\n; MaxProcs: 16\n" + job,
			fields: []HeaderField{
				{"Note", "one"}, {"Partition", "1 pbatch"}, {"Note", "two"}, {"Partition", "2 pdebug"},
				{"MaxProcs", "8"}, {"MaxProcs", "16"},
			},
			check: func(t *testing.T, h *Header) {
				if v, ok := h.Get("Note"); !ok || v != "one" {
					t.Errorf("Get(Note) = %q, %v; want one", v, ok)
				}
				if h.MaxProcs != 8 {
					t.Errorf("MaxProcs = %d, want 8 (first occurrence)", h.MaxProcs)
				}
			},
		},
		{
			name: "continuation lines",
			in: "; Information: http://www.pdc.kth.se/\n;              http://www.cs.huji.ac.il/labs/parallel/workload/\n" +
				"; Note: THIS IS A CLEANED VERSION OF THE LOG!\n;       The filters used to produce it were\n" +
				";         submit<=2006-12-18 00:00:00 (1434 jobs removed)\n;\n" +
				"; Note: less indented\n; still the note\n;   Key: value\n;        Fake: key-like text indented under the value\n" + job,
			fields: []HeaderField{
				{"Information", "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"},
				{"Note", "THIS IS A CLEANED VERSION OF THE LOG!\nThe filters used to produce it were\n  submit<=2006-12-18 00:00:00 (1434 jobs removed)"},
				{"Note", "less indented\nstill the note"},
				{"Key", "value\nFake: key-like text indented under the value"},
			},
		},
		{
			name: "unknown keys and free text",
			in:   "; Acknowledge: Lars\n; MaxPartitions: 4\n;\n;   http://orphan.example/\n; just some words\n;MaxQueues:2\n" + job,
			fields: []HeaderField{
				{"Acknowledge", "Lars"}, {"MaxPartitions", "4"}, {"", "http://orphan.example/"},
				{"", "just some words"}, {"MaxQueues", "2"},
			},
			check: func(t *testing.T, h *Header) {
				if v, ok := h.Get("maxpartitions"); !ok || v != "4" {
					t.Errorf("Get(maxpartitions) = %q, %v", v, ok)
				}
				if _, ok := h.Get("Missing"); ok {
					t.Error("Get(Missing) found something")
				}
			},
		},
		{
			name:   "keys are case-insensitive, tabs and trailing blanks are whitespace",
			in:     ";\tmaxprocs:\t 64 \t\n; Computer:  Cray  T3E   \r\n" + job,
			fields: []HeaderField{{"maxprocs", "64"}, {"Computer", "Cray  T3E"}},
			check: func(t *testing.T, h *Header) {
				if h.MaxProcs != 64 || h.Computer != "Cray  T3E" {
					t.Errorf("MaxProcs=%d Computer=%q", h.MaxProcs, h.Computer)
				}
			},
		},
		{
			name:   "empty value with continuation",
			in:     "; Note:\n;       first\n;         second\n" + job,
			fields: []HeaderField{{"Note", "\nfirst\n  second"}},
		},
		{
			name:   "header only, no final newline",
			in:     "; MaxProcs: 4\n;    (four)",
			fields: []HeaderField{{"MaxProcs", "4\n(four)"}},
			check: func(t *testing.T, h *Header) {
				if h.MaxProcs != 0 {
					t.Errorf("MaxProcs = %d; a multi-line value is not an integer", h.MaxProcs)
				}
			},
			lenient: true,
			skipped: 1,
		},
		{
			name:    "bad MaxProcs lenient",
			in:      "; Version: 2\n; MaxJobs: 10\n; MaxProcs: 1e\n" + job,
			fields:  []HeaderField{{"Version", "2"}, {"MaxJobs", "10"}, {"MaxProcs", "1e"}},
			lenient: true,
			skipped: 1,
			check: func(t *testing.T, h *Header) {
				if h.MaxProcs != 0 || h.MaxJobs != 10 {
					t.Errorf("MaxProcs=%d MaxJobs=%d; want 0 and 10", h.MaxProcs, h.MaxJobs)
				}
			},
		},
		{
			name:   "comments after the first job are appended",
			in:     "; Version: 2\n" + job + "; Note: mid\n;       more\n" + job + ";\n; trailing text",
			fields: []HeaderField{{"Version", "2"}, {"Note", "mid\nmore"}, {"", "trailing text"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.lenient {
				opts = append(opts, WithLenient())
			}
			r, _, err := readString(t, tt.in, opts...)
			if err != nil {
				t.Fatal(err)
			}
			h := r.Header()
			if tt.fields != nil && !reflect.DeepEqual(h.Fields, tt.fields) {
				t.Errorf("fields:\n got %q\nwant %q", h.Fields, tt.fields)
			}
			if tt.check != nil {
				tt.check(t, h)
			}
			if r.Skipped() != tt.skipped {
				t.Errorf("Skipped() = %d, want %d (%v)", r.Skipped(), tt.skipped, r.SkippedErrors())
			}
			// Every header the Reader produces must survive the Writer.
			r2, _ := roundTrip(t, h, nil, opts...)
			if !reflect.DeepEqual(*r2.Header(), *h) {
				t.Errorf("round trip:\n got %+v\nwant %+v", *r2.Header(), *h)
			}
		})
	}
}

func TestHeaderCompleteBeforeNext(t *testing.T) {
	r, err := NewReader(strings.NewReader("; Note: 4\n;   (four procs)\n"+job+"; Note: later\n"), "x.swf")
	if err != nil {
		t.Fatal(err)
	}
	want := []HeaderField{{"Note", "4\n(four procs)"}}
	if !reflect.DeepEqual(r.Header().Fields, want) {
		t.Fatalf("before Next: %q, want %q", r.Header().Fields, want)
	}
	if _, err := readAll(r); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Header().Fields); n != 2 {
		t.Fatalf("after reading: %d fields, want 2", n)
	}
}

func TestHeaderErrors(t *testing.T) {
	tests := []struct {
		name, in, msg string
		sentinel      error
	}{
		{"not an integer", "; Version: 2\n;\n; MaxProcs: 1e\n" + job, `x.swf:3: header MaxProcs: "1e": not an integer`, ErrNotInteger},
		{"empty", "; MaxJobs:\n" + job, `x.swf:1: header MaxJobs: "": not an integer`, ErrNotInteger},
		{"fraction", "; TimeZone: 3600.5\n" + job, `x.swf:1: header TimeZone: "3600.5": not an integer`, ErrNotInteger},
		{"out of range", "; UnixStartTime: 99999999999999999999\n" + job, `x.swf:1: header UnixStartTime: "99999999999999999999": out of range`, ErrOutOfRange},
		{"continuation makes it bad", "; MaxNodes: 4\n;           nodes\n" + job, "x.swf:1: header MaxNodes: \"4\\nnodes\": not an integer", ErrNotInteger},
		{"at EOF", "; MaxProcs: x", `x.swf:1: header MaxProcs: "x": not an integer`, ErrNotInteger},
		{"duplicate is checked too", "; MaxProcs: 4\n; MaxProcs: four\n" + job, `x.swf:2: header MaxProcs: "four": not an integer`, ErrNotInteger},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), "x.swf")
			if err == nil {
				t.Fatalf("NewReader succeeded (header %+v), want error", r.Header())
			}
			if err.Error() != tt.msg {
				t.Errorf("error\n got %s\nwant %s", err, tt.msg)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
			pe := parseErr(t, err)
			if pe.Key == "" || pe.Field != 0 {
				t.Errorf("Key=%q Field=%d; want the header key and field 0", pe.Key, pe.Field)
			}
		})
	}
}

// A malformed header value after the first job is reported by Next, before
// the job line that ends it, and reading can go on.
func TestHeaderErrorAfterJobs(t *testing.T) {
	in := job + "; MaxProcs: lots\n" + job
	r, err := NewReader(strings.NewReader(in), "x.swf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if err == nil || err.Error() != `x.swf:2: header MaxProcs: "lots": not an integer` {
		t.Fatalf("got %v", err)
	}
	got, err := r.Next()
	if err != nil || got.Line != 3 {
		t.Fatalf("after header error: line %d, %v; want line 3", got.Line, err)
	}

	r, recs, err := readString(t, in, WithLenient())
	if err != nil || len(recs) != 2 || r.Skipped() != 1 {
		t.Fatalf("lenient: %d records, %d skipped, %v", len(recs), r.Skipped(), err)
	}
}

func TestHeaderSet(t *testing.T) {
	var h Header
	for _, kv := range [][2]string{{"Version", "2.2"}, {"MaxProcs", "128"}, {"Note", "a"}, {"maxprocs", "256"}} {
		if err := h.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	want := []HeaderField{{"Version", "2.2"}, {"MaxProcs", "256"}, {"Note", "a"}}
	if !reflect.DeepEqual(h.Fields, want) || h.MaxProcs != 256 || h.Version != "2.2" {
		t.Fatalf("got %+v", h)
	}
	if err := h.Set("MaxProcs", "many"); err == nil || !errors.Is(err, ErrNotInteger) {
		t.Fatalf("Set(MaxProcs, many) = %v, want ErrNotInteger", err)
	}
	if h.MaxProcs != 256 || h.Fields[1].Value != "256" {
		t.Fatalf("failed Set changed the header: %+v", h)
	}
	for _, bad := range []string{"", "two words", "http://x", "1st", "a:b"} {
		if err := h.Set(bad, "v"); err == nil {
			t.Errorf("Set(%q) accepted an invalid key", bad)
		}
	}
}

// hostileHeader is a header of n repeated keys and a continuation of n
// lines, then one job: each line rescanning the fields would make reading
// it quadratic.
func hostileHeader(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString("; MaxProcs: 1\n")
	}
	b.WriteString("; Note: start\n")
	for range n {
		b.WriteString(";       more\n")
	}
	return b.String() + job
}

// A hostile header is read whole and right; that it costs linear time is
// BenchmarkHostileHeader's to show (10k against 100k lines), not a clock
// in a test on a shared machine.
func TestHostileHeaderIsRead(t *testing.T) {
	r, recs, err := readString(t, hostileHeader(100_000))
	if err != nil || len(recs) != 1 || len(r.Header().Fields) != 100_001 || r.Header().MaxProcs != 1 {
		t.Fatalf("%d records, %d fields, %v", len(recs), len(r.Header().Fields), err)
	}
}

// BenchmarkHostileHeader reads hostile headers of 10k and 100k lines each:
// ns/op should grow about 10x between them (linear), not 100x.
func BenchmarkHostileHeader(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		text := hostileHeader(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				r, err := NewReader(strings.NewReader(text), "hostile.swf")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := readAll(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
