package now

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// f = 1 + U·p with U in [0,1): with p = 0.5 every estimate of t = 100 s
// lies in (100/1.5, 100·1.5) = (66.67 s, 150 s); both sides of t occur.
func TestFuzzyEstimateBounds(t *testing.T) {
	f := Fuzzy{P: 0.5, Rand: rand.New(rand.NewPCG(1, 1))}
	tt := 100 * time.Second
	lo, hi := time.Duration(float64(tt)/1.5), time.Duration(float64(tt)*1.5)
	var above, below int
	for range 10000 {
		e := f.Estimate("", tt)
		if e <= lo || e >= hi {
			t.Fatalf("estimate %v outside (%v, %v)", e, lo, hi)
		}
		switch {
		case e > tt:
			above++
		case e < tt:
			below++
		}
	}
	if above < 4500 || below < 4500 {
		t.Errorf("%d above and %d below t: want about half each", above, below)
	}
	exact := Fuzzy{P: 0, Rand: rand.New(rand.NewPCG(1, 1))}
	for range 100 {
		if e := exact.Estimate("", tt); e != tt {
			t.Fatalf("p = 0 gave %v", e)
		}
	}
}

// Weight 0.5, prior 10 s, worked by hand:
//
//	start                      a: 10 (prior)
//	observe a 4 s   e_a = 4                      g = 4
//	observe a 8 s   e_a = .5·8 + .5·4 = 6        g = .5·8 + .5·4 = 6
//	observe b 12 s  e_b = 12                     g = .5·12 + .5·6 = 9
func TestLearnedEWMAByHand(t *testing.T) {
	l := NewLearned(0.5, 10*time.Second)
	check := func(step string, want map[string]time.Duration) {
		t.Helper()
		for prog, w := range want {
			if got := l.Estimate(prog, time.Hour); got != w {
				t.Errorf("%s: estimate of %q = %v, want %v", step, prog, got, w)
			}
		}
	}
	check("start", map[string]time.Duration{"a": 10 * s, "": 10 * s})
	l.Observe("a", 4*s)
	check("a 4s", map[string]time.Duration{"a": 4 * s, "b": 4 * s, "": 4 * s})
	l.Observe("a", 8*s)
	check("a 8s", map[string]time.Duration{"a": 6 * s, "b": 6 * s})
	l.Observe("b", 12*s)
	check("b 12s", map[string]time.Duration{"a": 6 * s, "b": 12 * s, "c": 9 * s, "": 9 * s})
	l.Observe("", 1*s) // no program: only g moves, .5·1 + .5·9 = 5
	check("anonymous 1s", map[string]time.Duration{"a": 6 * s, "": 5 * s})
}

func TestParseEstimate(t *testing.T) {
	for in, want := range map[string]EstimateSpec{
		"exact":           {Mode: EstimateExact},
		"fuzzy:0.5":       {Mode: EstimateFuzzy, Param: 0.5},
		"FUZZY:0":         {Mode: EstimateFuzzy},
		"learned:0.3":     {Mode: EstimateLearned, Param: 0.3},
		"learned:1:1h30m": {Mode: EstimateLearned, Param: 1, Prior: 90 * time.Minute},
	} {
		got, err := ParseEstimate(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "exact:1", "fuzzy", "fuzzy:-1", "fuzzy:x", "learned", "learned:0", "learned:1.5", "learned:0.3:-1s", "oracle"} {
		if _, err := ParseEstimate(in); err == nil || !strings.Contains(err.Error(), "want exact, fuzzy:P or learned:W[:PRIOR]") {
			t.Errorf("%q: %v", in, err)
		}
	}
}
