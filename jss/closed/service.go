package closed

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/cosched/cosched/internal/fielderr"
)

// Dist is a service-time distribution family.
type Dist string

// The distributions, each of mean m (Service.Mean):
//
//	erlang2           two exponential stages of mean m/2 each: C = 1/√2
//	exp               exponential: C = 1
//	branching-erlang  two-stage branching Erlang (a Coxian-2) of coefficient
//	                  of variation C > 1: a first exponential stage of rate
//	                  μ1 = 2/m, then with probability p = 1/(2C²) a second
//	                  of rate μ2 = 1/(m·C²); mean m, variance (C·m)²
const (
	Erlang2         Dist = "erlang2"
	Exponential     Dist = "exp"
	BranchingErlang Dist = "branching-erlang"
)

// Erlang2CV is the coefficient of variation of the Erlang-2 distribution,
// 1/√2.
var Erlang2CV = 1 / math.Sqrt2

// Dists lists the distributions.
func Dists() []Dist { return []Dist{Erlang2, Exponential, BranchingErlang} }

// DistNames lists the distributions' names, comma-separated.
func DistNames() string {
	var names []string
	for _, d := range Dists() {
		names = append(names, string(d))
	}
	return strings.Join(names, ", ")
}

// ParseDist resolves a distribution name.
func ParseDist(name string) (Dist, error) {
	d := Dist(strings.ToLower(strings.TrimSpace(name)))
	if slices.Contains(Dists(), d) {
		return d, nil
	}
	return "", fmt.Errorf("closed: unknown distribution %q (valid: %s)", name, DistNames())
}

// DistForCV is the distribution Karatza's studies use for a coefficient of
// variation: 1/√2 (0.707, to three decimals) is Erlang-2, 1 is
// exponential, above 1 is the branching Erlang. Other values have none.
func DistForCV(cv float64) (Dist, error) {
	switch {
	case math.Abs(cv-Erlang2CV) < 5e-4:
		return Erlang2, nil
	case cv == 1:
		return Exponential, nil
	case cv > 1 && !math.IsInf(cv, 1):
		return BranchingErlang, nil
	}
	return "", fmt.Errorf("closed: no service distribution has coefficient of variation %g (want 0.707 for erlang2, 1 for exp, or above 1 for branching-erlang)", cv)
}

// Service is the distribution of a job's service time (the time each of its
// tasks runs).
type Service struct {
	Dist Dist `json:"dist"`
	// Mean is m, positive.
	Mean float64 `json:"mean"`
	// CV is the coefficient of variation C; only the branching Erlang reads
	// it (C > 1). Erlang-2 and exponential have theirs fixed.
	CV float64 `json:"cv"`
}

// Validate reports every problem with the distribution at once.
func (s Service) Validate() error {
	names := map[string]string{"Service.Dist": "distribution", "Service.Mean": "mean", "Service.CV": "coefficient of variation"}
	var errs []error
	for _, e := range fielderr.All(errors.Join(s.fieldErrors()...)) {
		errs = append(errs, errors.New(fielderr.Format(names[e.Field], e)))
	}
	return errors.Join(errs...)
}

// fieldErrors are Validate's problems keyed by field (Service.Dist,
// Service.Mean, Service.CV), as an Experiment reports them.
func (s Service) fieldErrors() []error {
	var errs []error
	if !slices.Contains(Dists(), s.Dist) {
		errs = append(errs, fielderr.New("Service.Dist", strconv.Quote(string(s.Dist)), "unknown (valid: %s)", DistNames()))
	}
	if !(s.Mean > 0) || math.IsInf(s.Mean, 1) {
		errs = append(errs, fielderr.New("Service.Mean", s.Mean, "must be positive and finite"))
	}
	if s.Dist == BranchingErlang && (!(s.CV > 1) || math.IsInf(s.CV, 1)) {
		errs = append(errs, fielderr.New("Service.CV", s.CV, "the branching Erlang needs C > 1"))
	}
	return errs
}

// C is the distribution's coefficient of variation.
func (s Service) C() float64 {
	switch s.Dist {
	case Erlang2:
		return Erlang2CV
	case Exponential:
		return 1
	}
	return s.CV
}

// Draw returns one service time.
func (s Service) Draw(r *rand.Rand) float64 {
	m := s.Mean
	switch s.Dist {
	case Erlang2:
		return (r.ExpFloat64() + r.ExpFloat64()) * m / 2
	case BranchingErlang:
		c2 := s.CV * s.CV
		x := r.ExpFloat64() * m / 2 // stage 1, rate 2/m
		if r.Float64() < 1/(2*c2) {
			x += r.ExpFloat64() * m * c2 // stage 2, rate 1/(m·C²)
		}
		return x
	}
	return r.ExpFloat64() * m
}

// String describes the distribution: "exp (m=1, C=1)".
func (s Service) String() string {
	return fmt.Sprintf("%s (m=%g, C=%.3g)", s.Dist, s.Mean, s.C())
}

// ServiceFor resolves a service distribution as a command line gives it:
// dist by name, or, when empty, the one cv calls for (DistForCV); a cv
// given with a dist must be that dist's, and the branching Erlang needs
// one. Errors are keyed by field (fielderr: Service.Dist, Service.CV).
func ServiceFor(dist string, cv float64, cvGiven bool, mean float64) (Service, error) {
	svc := Service{Mean: mean}
	if dist == "" {
		d, err := DistForCV(cv)
		if err != nil {
			return svc, fielderr.New("Service.CV", cv, "no service distribution (want 0.707 for erlang2, 1 for exp, or above 1 for branching-erlang)")
		}
		svc.Dist = d
	} else {
		d, err := ParseDist(dist)
		if err != nil {
			return svc, fielderr.New("Service.Dist", strconv.Quote(dist), "unknown (valid: %s)", DistNames())
		}
		svc.Dist = d
		switch {
		case d == BranchingErlang && !cvGiven:
			return svc, fielderr.New("Service.Dist", d, "needs {Service.CV} above 1")
		case cvGiven:
			if byCV, err := DistForCV(cv); err != nil || byCV != d {
				return svc, fielderr.New("Service.CV", cv, "does not match {Service.Dist} %s (C = %.3g)", d, Service{Dist: d, CV: cv}.C())
			}
		}
	}
	svc.CV = cv
	if svc.Dist != BranchingErlang {
		svc.CV = svc.C()
	}
	return svc, nil
}
