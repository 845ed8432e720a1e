package progress

import (
	"bytes"
	"strings"
	"testing"
)

// Off a terminal, a line at about every tenth of the items, and none twice
// for the same tenth.
func TestLinesOffATerminal(t *testing.T) {
	var out bytes.Buffer
	p := New(&out, "sweep", "points", 20)
	for done := 1; done <= 20; done++ {
		p.Update(done, 20)
	}
	p.Finish(true)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "sweep: 2/20 points (10%), ") || !strings.HasPrefix(lines[9], "sweep: 20/20 points (100%), ") {
		t.Errorf("got %d lines:\n%s", len(lines), out.String())
	}
	out.Reset()
	p = New(&out, "sweep", "points", 3)
	p.Update(3, 3)
	if !strings.HasPrefix(out.String(), "sweep: 3/3 points (100%), ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("a jump to the end: %q, want one line", out.String())
	}
}
