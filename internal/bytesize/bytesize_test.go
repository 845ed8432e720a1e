package bytesize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dustin/go-humanize"
)

// Format is humanize.IBytes on every boundary of every unit and on
// random sizes of every magnitude.
func TestFormatIsHumanize(t *testing.T) {
	var ns []uint64
	for e := range 64 {
		for _, d := range []int64{-2, -1, 0, 1, 2} {
			ns = append(ns, uint64(int64(1)<<e+d))
		}
	}
	for _, base := range []float64{1000, 1024} {
		for p := 1.0; p < 1e19; p *= base {
			for _, f := range []float64{0.9995, 0.9996, 0.99951, 9.995, 9.996, 9.9949, 99.95, 99.5, 999.5, 1023.5, 1.05, 1.15} {
				if v := f * p; v < math.MaxUint64 {
					ns = append(ns, uint64(v))
				}
			}
		}
	}
	ns = append(ns, 0, 9, 10, 1023, 1024, 10239, 10240, math.MaxUint64, math.MaxUint64-1)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		ns = append(ns, r.Uint64()>>r.IntN(64))
	}
	for _, n := range ns {
		if got, want := Format(n), humanize.IBytes(n); got != want {
			t.Errorf("Format(%d) = %q, humanize.IBytes: %q", n, got, want)
		}
	}
}

// Parse is humanize.ParseBytes, values and errors, on every unit in
// several spellings and on malformed input.
func TestParseIsHumanize(t *testing.T) {
	var in []string
	for _, u := range []string{"", "b", "B", "k", "K", "kb", "KB", "kB", "ki", "Ki", "kib", "KiB", "m", "MB", "mib", "MiB", "g", "GB", "GiB", "t", "TB", "TiB",
		"p", "PB", "PiB", "e", "EB", "EiB", "x", "kbb", "bytes", " MiB", "  gb ", "\tk", "é", "z"} {
		for _, n := range []string{"0", "1", "42", "1.5", "1,024", "0.001", ".5", "5.", "1.2.3", "", ",", "18446744073709551615", "18446744073709551616",
			"16", "17", "16000", "9007199254740993", "1e3", "-1", "١٢"} {
			in = append(in, n+u)
		}
	}
	in = append(in, "", " ", "abc", "1 2", "1,,0k", "1_000")
	for _, s := range in {
		got, gerr := Parse(s)
		want, werr := humanize.ParseBytes(s)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("Parse(%q) = %d, %v; humanize.ParseBytes: %d, %v", s, got, gerr, want, werr)
		}
	}
}
