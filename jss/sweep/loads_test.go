package sweep

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseLoadsRangeIsExact(t *testing.T) {
	got, err := ParseLoads("0.1:1.6:0.1")
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	var text []string
	for i := 1; i <= 16; i++ {
		s := strconv.FormatFloat(float64(i)/10, 'f', -1, 64) // i/10 is the double nearest 0.i
		v, _ := strconv.ParseFloat(s, 64)
		want = append(want, v)
		text = append(text, s)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	var printed []string
	for _, v := range got {
		printed = append(printed, strconv.FormatFloat(v, 'f', -1, 64))
	}
	if strings.Join(printed, ",") != "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1,1.1,1.2,1.3,1.4,1.5,1.6" || strings.Join(printed, ",") != strings.Join(text, ",") {
		t.Errorf("printed %v", printed)
	}
}

func TestParseLoads(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
	}{
		{"0.8", []float64{0.8}},
		{"0.2, 0.8", []float64{0.2, 0.8}},
		{"0.8,0.2,0.8", []float64{0.8, 0.2}},                             // repeats dropped, order kept
		{"0.1:0.5:0.1,0.3,1.2", []float64{0.1, 0.2, 0.3, 0.4, 0.5, 1.2}}, // ranges and values mixed
		{"0.5:0.5:0.1", []float64{0.5}},
		{"0.1:1:0.3", []float64{0.1, 0.4, 0.7, 1}}, // hi on the grid up to rounding
		{"0.1:0.9:0.3", []float64{0.1, 0.4, 0.7}},  // hi off the grid
		{"0.05:0.2:0.05", []float64{0.05, 0.1, 0.15, 0.2}},
		{"1:3:1", []float64{1, 2, 3}},
		{"0.7:1.3:0.2", []float64{0.7, 0.9, 1.1, 1.3}},
	} {
		got, err := ParseLoads(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseLoadsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no load"},
		{"fast", `load "fast": not a number`},
		{"0", "must be positive"},
		{"-0.5", "must be positive"},
		{"NaN", "not a number"},
		{"0.1:1.6", "want lo:hi:step"},
		{"0.1:1.6:0.1:2", "want lo:hi:step"},
		{"0.1:x:0.1", `"x" is not a number`},
		{"1.6:0.1:0.1", "hi is below lo"},
		{"0.1:1.6:0", "step must be positive"},
		{"0.1:1.6:-0.1", "step must be positive"},
		{"0:1:0.1", "lo must be positive"},
		{"0.1:100:0.0001", "more than 10000"},
	} {
		_, err := ParseLoads(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sweep: ") {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}
