package api

import (
	"strings"
	"testing"

	"github.com/cosched/cosched/telemetry"
)

func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{"a1": {Epoch: 1765000000000000000, Seq: 42}, "a0": {Epoch: 7, Seq: 0}, "host:1": {Epoch: 3, Seq: 9}}
	s := c.String()
	if s != "a0:7.0,a1:1765000000000000000.42,host:1:3.9" {
		t.Fatalf("String: %q", s)
	}
	back, err := ParseCursor(s)
	if err != nil || len(back) != 3 || back["a1"] != c["a1"] || back["host:1"] != c["host:1"] {
		t.Fatalf("ParseCursor(%q) = %v, %v", s, back, err)
	}
	if empty, err := ParseCursor(""); err != nil || len(empty) != 0 {
		t.Fatalf("empty cursor: %v, %v", empty, err)
	}
}

func TestCursorRejectsMalformed(t *testing.T) {
	for _, s := range []string{"a1", "a1:", ":1.2", "a1:12", "a1:x.2", "a1:1.2.3", "a1:-1.2", "a1:1.2,a1:1.3", "a1:1.2,"} {
		if c, err := ParseCursor(s); err == nil {
			t.Errorf("ParseCursor(%q) = %v, want an error", s, c)
		}
	}
	if _, err := ParseCursor("a1:1.2,a2:oops"); err == nil || !strings.Contains(err.Error(), "a2") {
		t.Errorf("error %v: want it to name node a2", err)
	}
}

// Records are ordered by epoch first: a later leader's slice 1 comes after
// an earlier one's slice 5000.
func TestRecordIDOrder(t *testing.T) {
	old, later := IDOf(telemetry.SliceRecord{Epoch: 10, Seq: 5000}), RecordID{Epoch: 11, Seq: 1}
	if old.Compare(later) >= 0 || later.Compare(old) <= 0 || old.Compare(old) != 0 {
		t.Fatalf("%v vs %v: wrong order", old, later)
	}
}

// An agent whose newest slice is older than the cursor's (restarted, no
// slice yet) is behind: the reader reloads everything.
func TestCursorBehind(t *testing.T) {
	c := Cursor{"a0": {Epoch: 5, Seq: 100}, "a1": {Epoch: 5, Seq: 100}, "gone": {Epoch: 5, Seq: 1}}
	rep := NodesReport{Nodes: []NodeInfo{
		{Name: "a0", Stats: &NodeStats{Strobe: telemetry.FollowerStats{Epoch: 5, LastSeq: 100}}}, // nothing new
		{Name: "a1", Stats: &NodeStats{}}, // restarted: no strobe yet
		{Name: "a2", Stats: &NodeStats{}}, // not in the cursor
		{Name: "a3"},                      // did not answer
	}}
	if got := c.Behind(rep); len(got) != 1 || got[0] != "a1" {
		t.Fatalf("Behind = %v, want [a1]", got)
	}
	rep.Nodes[1].Stats.Strobe = telemetry.FollowerStats{Epoch: 6, LastSeq: 1} // a new leader's first slice
	if got := c.Behind(rep); len(got) != 0 {
		t.Fatalf("Behind after a failover = %v, want none", got)
	}
}
