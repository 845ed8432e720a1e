package swf

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tracesDir is /work/shared/traces seen from this package directory
// (jss/swf inside the module at /work/main).
func tracesDir() string { return filepath.Join("..", "..", "..", "shared", "traces") }

// tracePath returns the path of a shared trace, skipping the test if absent.
func tracePath(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(tracesDir(), name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("trace %s not available (looked in %s): %v", name, tracesDir(), err)
	}
	return p
}

// readAll reads every record; it stops at the first error other than EOF
// and returns it with the records read so far.
func readAll(r *Reader) ([]Record, error) {
	var recs []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
}

// readString builds a Reader named "x.swf" on s and reads it to the end.
func readString(t *testing.T, s string, opts ...Option) (*Reader, []Record, error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(s), "x.swf", opts...)
	if err != nil {
		return nil, nil, err
	}
	recs, err := readAll(r)
	return r, recs, err
}

// rec builds a record from up to 18 leading values, padding with -1.
func rec(line int, vals ...float64) Record {
	var f [NumFields]float64
	for i := range f {
		f[i] = Unknown
	}
	copy(f[:], vals)
	r := Record{Line: line}
	r.SetFields(f)
	return r
}

// sameFields compares the 18 fields bit for bit, so -0 and 0 differ.
func sameFields(a, b *Record) bool {
	fa, fb := a.Fields(), b.Fields()
	for i := range fa {
		if math.Float64bits(fa[i]) != math.Float64bits(fb[i]) {
			return false
		}
	}
	return true
}

// roundTrip writes h and recs and reads them back.
func roundTrip(tb testing.TB, h *Header, recs []Record, opts ...Option) (*Reader, []Record) {
	tb.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteHeader(h); err != nil {
		tb.Fatalf("WriteHeader: %v", err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			tb.Fatalf("Write: %v", err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatalf("Flush: %v", err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "roundtrip", opts...)
	if err != nil {
		tb.Fatalf("re-read header: %v\n%s", err, buf.Bytes())
	}
	got, err := readAll(r)
	if err != nil {
		tb.Fatalf("re-read records: %v", err)
	}
	return r, got
}

// checkSame fails unless both record lists hold the same fields in order.
func checkSame(tb testing.TB, want, got []Record) {
	tb.Helper()
	if len(want) != len(got) {
		tb.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameFields(&want[i], &got[i]) {
			tb.Fatalf("record %d: got %v, want %v", i, got[i].Fields(), want[i].Fields())
		}
	}
}

func parseErr(tb testing.TB, err error) *ParseError {
	tb.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		tb.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	return pe
}
