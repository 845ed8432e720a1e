package node

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/node/journal"
)

func voters(names ...string) []journal.Server {
	var out []journal.Server
	for _, n := range names {
		out = append(out, journal.Server{ID: n, Addr: n + ":7950", Voter: true})
	}
	return out
}

// Absence counts from the first look that missed the agent; a look that
// sees it again, or a group without it, forgets it.
func TestGoneSinceObserve(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := goneSince{}
	g.observe(voters("c0", "c1", "c2"), map[string]bool{"c0": true, "c2": true}, t0)
	g.observe(voters("c0", "c1", "c2"), map[string]bool{"c0": true}, t0.Add(time.Second))
	if want := (goneSince{"c1": t0, "c2": t0.Add(time.Second)}); !maps.Equal(g, want) {
		t.Fatalf("gone %v, want %v", g, want)
	}
	g.observe(voters("c0", "c2"), map[string]bool{"c0": true, "c2": true}, t0.Add(2*time.Second))
	if len(g) != 0 {
		t.Fatalf("gone %v after c1 left the group and c2 came back, want none", g)
	}
}

func TestGoneSinceDeadVoter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	after := 10 * time.Second
	five := voters("c0", "c1", "c2", "c3", "c4")
	withLearner := append(voters("c0", "c1", "c2"), journal.Server{ID: "c9", Addr: "c9:7950"})
	for _, tc := range []struct {
		name    string
		servers []journal.Server
		gone    goneSince
		now     time.Time
		want    string
	}{
		{"gone longer than the setting", voters("c0", "c1", "c2"), goneSince{"c1": t0}, t0.Add(11 * time.Second), "c1"},
		{"gone exactly the setting", voters("c0", "c1", "c2"), goneSince{"c1": t0}, t0.Add(after), ""},
		{"gone not long enough", voters("c0", "c1", "c2"), goneSince{"c1": t0}, t0.Add(5 * time.Second), ""},
		{"nobody gone", voters("c0", "c1", "c2"), goneSince{}, t0.Add(time.Hour), ""},
		{"never the leader itself", voters("c0", "c1", "c2"), goneSince{"c0": t0}, t0.Add(time.Hour), ""},
		{"two voters: one left would not be a majority of two", voters("c0", "c1"), goneSince{"c1": t0}, t0.Add(time.Hour), ""},
		{"the longest gone first", five, goneSince{"c3": t0.Add(time.Second), "c2": t0}, t0.Add(time.Hour), "c2"},
		{"equally long: by name", five, goneSince{"c4": t0, "c2": t0}, t0.Add(time.Hour), "c2"},
		{"four voters: three left are a majority of four", voters("c0", "c1", "c2", "c3"), goneSince{"c3": t0}, t0.Add(time.Hour), "c3"},
		{"non-voters are not counted or removed", withLearner, goneSince{"c9": t0}, t0.Add(time.Hour), ""},
	} {
		if got := tc.gone.deadVoter(tc.servers, "c0", tc.now, after); got != tc.want {
			t.Errorf("%s: removes %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The setting's text and range: "0" (never) by default; a negative or
// unreadable duration is refused, keyed by field, and so is a negative
// Config value.
func TestDeadControllerAfterSetting(t *testing.T) {
	s := DefaultSettings()
	s.Name = "n0"
	if c, err := s.Config(t.TempDir(), nil); err != nil || c.DeadControllerAfter != 0 {
		t.Fatalf("default: %v, %v; want 0", c.DeadControllerAfter, err)
	}
	for _, bad := range []string{"-1s", "soon", ""} {
		s.DeadControllerAfter = bad
		_, err := s.Config(t.TempDir(), nil)
		if fs := fielderr.All(err); len(fs) != 1 || fs[0].Field != "DeadControllerAfter" {
			t.Errorf("%q: %v, want one error keyed DeadControllerAfter", bad, err)
		}
	}
	c := Config{Name: "n0", Bind: "127.0.0.1:0", StateDir: t.TempDir(), Processors: 1, MPL: 1, DeadControllerAfter: -time.Second}
	if fs := fielderr.All(c.Validate()); !slices.ContainsFunc(fs, func(e *fielderr.Error) bool { return e.Field == "DeadControllerAfter" }) {
		t.Errorf("Validate of a negative setting: %v", c.Validate())
	}
}
