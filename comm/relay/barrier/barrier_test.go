package barrier

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRootSkipsNodesThatLeft(t *testing.T) {
	hosts := []string{"a", "b", "c"}
	left := map[string]bool{}
	in := func(n string) bool { return left[n] }
	if r := Root(hosts, in); r != "a" {
		t.Fatalf("root %q, want a", r)
	}
	left["a"] = true
	if r := Root(hosts, in); r != "b" {
		t.Fatalf("root %q after a left, want b", r)
	}
	left["b"], left["c"] = true, true
	if r := Root(hosts, in); r != "" {
		t.Fatalf("root %q after all left", r)
	}
	if r := Root(hosts, nil); r != "a" {
		t.Fatalf("root %q with no one left", r)
	}
}

// A barrier completes once, when the reports add up to the job's size;
// repeated and shrinking reports do not count twice; released barriers
// and reports too far ahead are ignored.
func TestCounterCompletesOnce(t *testing.T) {
	c := NewCounter(5)
	steps := []struct {
		node    string
		seq     uint64
		arrived int
		want    bool
	}{
		{"a", 1, 2, false},
		{"a", 1, 2, false}, // repeated
		{"b", 1, 1, false},
		{"a", 1, 1, false}, // an older, smaller report
		{"c", 1, 1, false}, // 4 of 5
		{"b", 2, 1, false}, // next barrier, early
		{"c", 1, 2, true},  // c's second rank: 5 of 5
		{"c", 1, 2, false}, // repeated after completion, not released yet: not again
	}
	for i, s := range steps {
		if got := c.Report(s.node, s.seq, s.arrived); got != s.want {
			t.Fatalf("step %d %+v: complete %v", i, s, got)
		}
	}
	if !c.Release(1) || c.Release(1) || c.Released() != 1 {
		t.Fatalf("release 1: released %d", c.Released())
	}
	if c.Report("a", 1, 5) {
		t.Fatal("a released barrier completed again")
	}
	if c.Report("a", 1+MaxAhead+1, 5) {
		t.Fatal("a report beyond MaxAhead counted")
	}
	if got := c.Open(); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("open %v, want [2]", got)
	}
	if !c.Report("a", 2, 4) {
		t.Fatal("barrier 2 incomplete with b's 1 and a's 4 of 5")
	}
}

// Against a dumb reference: whatever the order, loss and repetition of
// cumulative reports, the barrier completes exactly when every node's
// final count has been seen.
func TestCounterAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		nodes := 1 + rng.IntN(12)
		final := make([]int, nodes)
		size := 0
		for i := range final {
			final[i] = 1 + rng.IntN(4)
			size += final[i]
		}
		c := NewCounter(size)
		seen := make([]int, nodes)
		done := false
		for step := 0; step < 400 && !done; step++ {
			i := rng.IntN(nodes)
			n := 1 + rng.IntN(final[i]) // a cumulative count some time before or at the end
			got := c.Report(string(rune('a'+i)), 1, n)
			seen[i] = max(seen[i], n)
			want := true
			for k := range nodes {
				want = want && seen[k] == final[k]
			}
			if got != want {
				t.Fatalf("trial %d step %d: complete %v, reference %v (seen %v of %v)", trial, step, got, want, seen, final)
			}
			done = got
		}
	}
}
