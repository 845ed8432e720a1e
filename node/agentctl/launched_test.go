package agentctl

import (
	"slices"
	"testing"
)

// An agent's list of launched jobs stays bounded, and its floor covers
// every id it forgot: a controller never takes a forgotten launch for one
// that did not arrive.
func TestLaunchedForgetsBelowTheFloor(t *testing.T) {
	var l Launched
	for id := int64(1); id <= MaxLaunched+10; id++ {
		l.Add(id)
		l.Add(id) // a repeated launch counts once
	}
	l.Add(5000) // out of order: backfill starts later ids first
	ids, floor := l.List()
	if len(ids) != MaxLaunched {
		t.Fatalf("%d ids kept, want %d", len(ids), MaxLaunched)
	}
	if floor != 11 || ids[0] != 12 || ids[len(ids)-1] != 5000 {
		t.Fatalf("floor %d, ids %d…%d; want floor 11, ids 12…5000", floor, ids[0], ids[len(ids)-1])
	}
	for id := floor + 1; id <= MaxLaunched+10; id++ {
		if !slices.Contains(ids, id) {
			t.Fatalf("job %d above the floor is missing", id)
		}
	}
}
