package swf

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func benchmarkRead(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	records := 0
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		records = 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			records++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(records), "ns/record")
}

// BenchmarkReadKTH parses the KTH-SP2 log from memory, to measure parsing
// rather than the disk.
func BenchmarkReadKTH(b *testing.B) {
	data, err := os.ReadFile(tracePath(b, "KTH-SP2-1996-2.swf"))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkRead(b, data)
}

// BenchmarkReadSynthetic parses an in-memory 100k-line file, mostly plain
// integers as in real logs, with some fractional fields.
func BenchmarkReadSynthetic(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	h := &Header{}
	h.Set("Version", "2.2")
	h.Set("MaxProcs", "1024")
	if err := w.WriteHeader(h); err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		r := rec(0, float64(i+1), float64(i*37), float64(i%5000), float64(i%86400)+0.5*float64(i%2),
			float64(1+i%1024), -1, -1, float64(1+i%1024), float64(3600*(1+i%24)), -1, 1,
			float64(i%300), float64(i%30), -1, float64(i%4), -1, -1, -1)
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	benchmarkRead(b, buf.Bytes())
}

func BenchmarkWrite(b *testing.B) {
	r := rec(0, 28489, 29363384, 420, 8, 1, -1, -1, 1, 30000, -1, 1, 98, 198)
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
}
