package swf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"testing"
)

func FuzzReader(f *testing.F) {
	seeds := []string{
		"",
		job,
		"; Version: 2.2\n; Computer: IBM SP2\n; Information: http://www.pdc.kth.se/\n;              http://www.cs.huji.ac.il/labs/parallel/workload/\n" +
			"; MaxJobs: 28490\n; EndTime:   Fri Aug 29 10:55:01 CEST 1997\n; MaxProcs: 100\n;\n" +
			"    1        0 964980  97225   56     -1    -1   56 210000    -1  1   1   1  -1 -1 -1 -1 -1\n" +
			"    2   327952 291900   9382   80     -1    -1   80  14400    -1  1   2   2  -1 -1 -1 -1 -1\n",
		"; Note: THIS IS A CLEANED VERSION OF THE LOG!\n;       The filters used to produce it were\n;         submit<=2006-12-18\n;\n; Partition:  1  pbatch     \n",
		"; MaxProcs: 1e\n" + job,
		"; Note:\n;   x\n;      Key: y\n;;\n;:\n; a:b\n;\tT:\t\n",
		"1 12.5 0.25 -1 3 1e3 2.5E-1 +4 -0 .5 1. -2.75 13 14 15 16 17 123456789012345678\r\n\r\n",
		"1 2 3 4 NaN 6 7 8 9 10 11 12 13 14 15 16 17 18\n1 2 3\n1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n",
		"1 1e999 -1e-999 0x1p4 inf 1_0 7 8 9 10 11 12 13 14 15 16 17 18",
		job + "; Note: after\n;       jobs\n" + job + "; trailing",
		"\x00;\xff: \xfe\n;\v\f\r\n \t;MaxJobs:-9223372036854775808\n",
		"0.1 0.2 0.30000000000000004 1e-320 4.9e-324 1.7976931348623157e308 -0 -0.0 0 1 2 3 4 5 6 7 8 9\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Strict: only *ParseError or EOF, and reading always makes progress.
		var strict []Record
		sr, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			parseErr(t, err)
		} else {
			for {
				rec, err := sr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					parseErr(t, err)
					continue
				}
				strict = append(strict, rec)
			}
		}

		// Lenient: never fails, and yields what strict yields between errors.
		r, err := NewReader(bytes.NewReader(data), "fuzz", WithLenient())
		if err != nil {
			t.Fatalf("lenient NewReader: %v", err)
		}
		recs, err := readAll(r)
		if err != nil {
			t.Fatalf("lenient Next: %v", err)
		}
		if sr != nil && !reflect.DeepEqual(recomparable(strict), recomparable(recs)) {
			t.Fatalf("strict and lenient disagree:\n%v\n%v", strict, recs)
		}
		if r.Skipped() < len(r.SkippedErrors()) || len(r.SkippedErrors()) > 10 {
			t.Fatalf("Skipped %d, SkippedErrors %d", r.Skipped(), len(r.SkippedErrors()))
		}
		for _, rec := range recs {
			if rec.Line < 1 {
				t.Fatalf("record without a line number: %+v", rec)
			}
		}

		// Whatever was read is written and read back exactly. Malformed
		// typed header values stay malformed, so the re-read is lenient,
		// but it may only skip header values, never job lines.
		r2, got := roundTrip(t, r.Header(), recs, WithLenient())
		checkSame(t, recs, got)
		for _, err := range r2.SkippedErrors() {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Key == "" {
				t.Fatalf("re-read skipped a job line: %v", err)
			}
		}
		if !reflect.DeepEqual(*r2.Header(), *r.Header()) {
			t.Fatalf("header changed:\n got %#v\nwant %#v", *r2.Header(), *r.Header())
		}
	})
}

// recomparable maps records to bit patterns so that -0 and NaN-free values
// compare exactly with reflect.DeepEqual.
func recomparable(recs []Record) [][NumFields + 1]uint64 {
	out := make([][NumFields + 1]uint64, len(recs))
	for i := range recs {
		f := recs[i].Fields()
		out[i][0] = uint64(recs[i].Line)
		for j, v := range f {
			out[i][j+1] = math.Float64bits(v)
		}
	}
	return out
}

// FuzzRecordRoundTrip writes arbitrary finite float64 values (any bit
// pattern: subnormals, huge values, negative zero) and reads them back.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add(make([]byte, 8*NumFields))
	f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1)))
	f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.SmallestNonzeroFloat64)))
	f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(-math.MaxFloat64)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v [NumFields]float64
		for i := range v {
			v[i] = Unknown
			if len(data) >= 8*(i+1) {
				v[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
				if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
					v[i] = Unknown
				}
			}
		}
		var r Record
		r.SetFields(v)
		_, got := roundTrip(t, &Header{}, []Record{r})
		checkSame(t, []Record{r}, got)
	})
}
