package closed

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Each distribution's sample mean and coefficient of variation are its
// parameters', within sampling error (200,000 draws: relative standard
// errors well under 1 %).
func TestServiceMoments(t *testing.T) {
	for _, s := range []Service{
		{Dist: Erlang2, Mean: 2},
		{Dist: Exponential, Mean: 1},
		{Dist: BranchingErlang, Mean: 1, CV: 2},
		{Dist: BranchingErlang, Mean: 3, CV: 1.5},
	} {
		r := rand.New(rand.NewPCG(7, 8))
		const n = 200000
		var sum, sum2 float64
		for range n {
			x := s.Draw(r)
			sum += x
			sum2 += x * x
		}
		mean := sum / n
		cv := math.Sqrt(sum2/n-mean*mean) / mean
		if math.Abs(mean-s.Mean)/s.Mean > 0.02 {
			t.Errorf("%s: mean %.4f", s, mean)
		}
		if math.Abs(cv-s.C())/s.C() > 0.03 {
			t.Errorf("%s: C %.4f", s, cv)
		}
	}
}

func TestDistForCV(t *testing.T) {
	for cv, want := range map[float64]Dist{0.707: Erlang2, 1 / math.Sqrt2: Erlang2, 1: Exponential, 1.0001: BranchingErlang, 4: BranchingErlang} {
		if got, err := DistForCV(cv); err != nil || got != want {
			t.Errorf("DistForCV(%v) = %q, %v; want %q", cv, got, err, want)
		}
	}
	for _, cv := range []float64{0, 0.5, 0.71, 0.99, math.Inf(1), math.NaN()} {
		if d, err := DistForCV(cv); err == nil {
			t.Errorf("DistForCV(%v) = %q, want an error", cv, d)
		}
	}
}

func TestServiceValidate(t *testing.T) {
	good := []Service{{Dist: Erlang2, Mean: 1}, {Dist: Exponential, Mean: 0.5}, {Dist: BranchingErlang, Mean: 1, CV: 1.2}}
	for _, s := range good {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	bad := []Service{{Dist: "gamma", Mean: 1}, {Dist: Exponential}, {Dist: BranchingErlang, Mean: 1, CV: 1}, {Dist: BranchingErlang, Mean: 1}}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}
