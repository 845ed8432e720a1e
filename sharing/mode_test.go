package sharing

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, m := range Modes() {
		if got, err := Parse(strings.ToUpper(string(m))); got != m || err != nil {
			t.Errorf("Parse(%q) = %q, %v", strings.ToUpper(string(m)), got, err)
		}
	}
	// The former names are read by ParseFormer only, so that a
	// configuration is never silently given one.
	for _, s := range []string{"bf", "bgs", "", "fifo"} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), "valid: space, gang, bcs, local") {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
}

func TestParseFormer(t *testing.T) {
	for in, want := range map[string]Mode{"bf": Space, "BGS": Gang, "bcs": BCS, "space": Space, "gang": Gang, "local": Local} {
		m, wasFormer, err := ParseFormer(in)
		if m != want || err != nil || wasFormer != (in == "bf" || in == "BGS") {
			t.Errorf("ParseFormer(%q) = %q, %v, %v", in, m, wasFormer, err)
		}
	}
	if _, _, err := ParseFormer("fifo"); err == nil {
		t.Error("ParseFormer(fifo): no error")
	}
	if w := FormerWarning("bgs", Gang); !strings.Contains(w, `"bgs" is the former name of gang`) {
		t.Errorf("warning %q", w)
	}
}
