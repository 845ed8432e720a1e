package textvalue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestListParsesDropsRepeatsAndNamesBadItems(t *testing.T) {
	got, errs := List("MPLs", " 2, 1,2,,x ", strconv.Atoi)
	if !slices.Equal(got, []int{2, 1}) {
		t.Errorf("List = %v, want [2 1]", got)
	}
	if len(errs) != 1 || errs[0].Error() != `MPLs "x": strconv.Atoi: parsing "x": invalid syntax` {
		t.Errorf("errors = %v", errs)
	}
	if _, errs := List("MPLs", " , ", strconv.Atoi); len(errs) != 1 || errs[0].Error() != "MPLs: no value given" {
		t.Errorf("empty list: %v", errs)
	}
}

func TestSize(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "256MB": 256e6, "1MiB": 1 << 20} {
		if n, err := Size(s); err != nil || n != want {
			t.Errorf("Size(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"lots", "-1MB", fmt.Sprint(uint64(1) << 63)} {
		if _, err := Size(s); err == nil {
			t.Errorf("Size(%q) accepted", s)
		}
	}
}

func TestBandwidth(t *testing.T) {
	for s, want := range map[string]float64{"0": 0, "100MB": 100e6, "1KiB": 1024, "1": 1} {
		if got, err := Bandwidth(s); err != nil || got != want {
			t.Errorf("Bandwidth(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0B", "fast", "-1MB"} {
		if _, err := Bandwidth(s); err == nil || err.Error() != "want a size per second (e.g. 100MB) or 0" {
			t.Errorf("Bandwidth(%q): error %v, want the size-per-second message", s, err)
		}
	}
}

// A Flag reads a good text into its target and keeps a bad one's error,
// keyed by its field, without failing Set (nor changing the target).
func TestFlagKeepsTheErrorOfABadText(t *testing.T) {
	var bw float64
	f := NewFlag(&bw, "Bandwidth", "100MB", Bandwidth)
	if bw != 100e6 || f.Err != nil || f.String() != "100MB" || f.Type() != "string" {
		t.Fatalf("default: %v, %v, %q", bw, f.Err, f.String())
	}
	if err := f.Set("fast"); err != nil {
		t.Fatalf("Set failed: %v", err)
	}
	if bw != 100e6 || f.Err == nil || f.Err.Error() != `Bandwidth "fast": want a size per second (e.g. 100MB) or 0` || f.String() != "fast" {
		t.Fatalf("bad text: %v, %v, %q", bw, f.Err, f.String())
	}
	if f.Set("1KiB"); bw != 1024 || f.Err != nil {
		t.Fatalf("good text after a bad one: %v, %v", bw, f.Err)
	}
}

func TestDuration(t *testing.T) {
	if d, err := Duration("1m30s"); err != nil || d != 90*time.Second {
		t.Errorf("1m30s: %v, %v", d, err)
	}
	if _, err := Duration("soon"); err == nil || err.Error() != "not a duration (e.g. 50ms)" {
		t.Errorf("soon: %v", err)
	}
}

func TestNamesSaysEveryUnknownName(t *testing.T) {
	lookup := func(s string) (string, error) {
		if s == "a" || s == "b" {
			return s, nil
		}
		return "", errors.New("unknown")
	}
	if got, err := Names(" b, a,b ,,", "policy", "policies", "a, b", lookup); err != nil || !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("got %v, %v; want [b a] in order, repeats dropped", got, err)
	}
	for list, want := range map[string]string{
		"a,x":   `unknown policy "x" (valid: a, b)`,
		"x,a,y": `unknown policies "x", "y" (valid: a, b)`,
		" , ":   `no policy given (valid: a, b)`,
	} {
		if _, err := Names(list, "policy", "policies", "a, b", lookup); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", list, err, want)
		}
	}
}
