package fielderr

import (
	"errors"
	"fmt"
	"testing"
)

func TestRenderNamesEveryField(t *testing.T) {
	flags := map[string]string{"Slice": "--slice", "JobSwitch": "--job-switch", "SeqShare": "--seq-share", "LargeShare": "--large-share"}
	name := func(f string) string { return flags[f] }
	for _, c := range []struct {
		e           *Error
		want, plain string
	}{
		{New("Slice", nil, "must be positive"), "--slice: must be positive", "Slice: must be positive"},
		{New("Slice", "1ms", "must exceed {JobSwitch} %v", "2ms"), "--slice 1ms: must exceed --job-switch 2ms", "Slice 1ms: must exceed JobSwitch 2ms"},
		{Several(" + ", []Term{{"SeqShare", 0.8}, {"LargeShare", 0.5}}, "must not exceed 1"),
			"--seq-share 0.8 + --large-share 0.5: must not exceed 1", "SeqShare 0.8 + LargeShare 0.5: must not exceed 1"},
		{Several("/", []Term{{"SeqShare", nil}, {"LargeShare", nil}}, "too many"), "--seq-share/--large-share: too many", "SeqShare/LargeShare: too many"},
		{Said("SeqShare", "applies only with {Slice}"), "--seq-share applies only with --slice", "SeqShare applies only with Slice"},
	} {
		if got := c.e.Render(name); got != c.want {
			t.Errorf("Render = %q, want %q", got, c.want)
		}
		if got := c.e.Error(); got != c.plain {
			t.Errorf("Error = %q, want %q", got, c.plain)
		}
	}
	if got := Expand("pass {SeqShare} {JobSwitch} and {Other", name); got != "pass --seq-share --job-switch and {Other" {
		t.Errorf("Expand = %q", got)
	}
	if got := Format("--s", New("Slice", 1, "over {JobSwitch}")); got != "--s 1: over JobSwitch" {
		t.Errorf("Format = %q", got)
	}
}

func TestAllFindsJoinedAndWrapped(t *testing.T) {
	a, b := New("A", 1, "bad"), New("B", nil, "bad")
	if got := All(errors.Join(a, fmt.Errorf("ctx: %w", b))); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("All = %v, want both", got)
	}
	if got := All(fmt.Errorf("pkg: %w", errors.Join(a, errors.New("plain"), b))); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("All of a wrapped join = %v, want both", got)
	}
	if All(nil) != nil || len(All(errors.New("x"))) != 0 {
		t.Error("All of nil or a plain error is not empty")
	}
}

// Merge keeps every parse problem, and Validate's about the other fields.
func TestMergeDropsValidateOnUnparsedFields(t *testing.T) {
	slice, mpl := New("Slice", `"soon"`, "not a duration"), New("MPL", 0, "must be from 1 to 64")
	got := All(Merge(errors.Join(slice), errors.Join(New("Slice", "0s", "must be positive"), mpl)))
	if len(got) != 2 || got[0] != slice || got[1] != mpl {
		t.Errorf("Merge = %v", got)
	}
	if Merge(nil, nil) != nil {
		t.Error("Merge of nothing is not nil")
	}
}
