package closed

import (
	"testing"

	"github.com/cosched/cosched/internal/fielderr"
)

func TestServiceForResolvesAndKeysProblems(t *testing.T) {
	if s, err := ServiceFor("", 1, false, 2); err != nil || s.Dist != Exponential || s.Mean != 2 || s.CV != 1 {
		t.Errorf("cv 1: %+v, %v", s, err)
	}
	if s, err := ServiceFor("branching-erlang", 3, true, 1); err != nil || s.Dist != BranchingErlang || s.CV != 3 {
		t.Errorf("branching-erlang cv 3: %+v, %v", s, err)
	}
	for _, c := range []struct {
		dist    string
		cv      float64
		cvGiven bool
		want    string
	}{
		{"", 0.5, true, "Service.CV 0.5: no service distribution (want 0.707 for erlang2, 1 for exp, or above 1 for branching-erlang)"},
		{"gamma", 1, false, `Service.Dist "gamma": unknown (valid: ` + DistNames() + ")"},
		{"branching-erlang", 1, false, "Service.Dist branching-erlang: needs Service.CV above 1"},
		{"exp", 2, true, "Service.CV 2: does not match Service.Dist exp (C = 1)"},
	} {
		_, err := ServiceFor(c.dist, c.cv, c.cvGiven, 1)
		if fe := fielderr.All(err); len(fe) != 1 || fe[0].Error() != c.want {
			t.Errorf("%q cv %g: %v, want %q", c.dist, c.cv, err, c.want)
		}
	}
}
