package closed

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
)

// Settings is an experiment as a command line writes it: the numbers of
// circulating jobs and the policies as comma-separated lists, the service
// distribution by name or by its coefficient of variation (ServiceFor).
// Experiment holds the other fields; Parse sets its Jobs, Policies and
// Service.
type Settings struct {
	Experiment
	JobList     string  // numbers of jobs N: "2,4,6"
	PolicyList  string  // policy names: "fcfs,ljfs"
	Dist        string  // the distribution's name; "" for the one CV calls for
	CV          float64 // its coefficient of variation
	CVGiven     bool    // whether CV was given (else a named Dist is not checked against it)
	ServiceMean float64 // the mean service time
}

// Parse reads s into an experiment and validates it (Experiment.Validate),
// reporting every problem at once, keyed by the Experiment's fields (Jobs,
// Policies, Service.Dist, Service.CV, ...).
func (s Settings) Parse() (*Experiment, error) {
	e := s.Experiment
	var unparsed []string // fields that did not parse: Validate's word on them is noise
	var ee []error
	jobs, errs := textvalue.List("Jobs", s.JobList, func(item string) (int, error) {
		n, err := strconv.Atoi(item)
		if err != nil || n < 1 || n > MaxJobs {
			return 0, fmt.Errorf("want a whole number of jobs in 1..%d", MaxJobs)
		}
		return n, nil
	})
	if e.Jobs = jobs; len(errs) > 0 {
		unparsed = append(unparsed, "Jobs")
	}
	e.Policies, ee = textvalue.List("Policies", s.PolicyList, func(item string) (Policy, error) {
		p, err := ParsePolicy(item)
		if err != nil {
			return "", fmt.Errorf("unknown policy (valid: %s)", PolicyNames())
		}
		return p, nil
	})
	if len(ee) > 0 {
		errs, unparsed = append(errs, ee...), append(unparsed, "Policies")
	}
	var err error
	if e.Service, err = ServiceFor(s.Dist, s.CV, s.CVGiven, s.ServiceMean); err != nil {
		errs, unparsed = append(errs, err), append(unparsed, "Service.Dist", "Service.CV")
	}
	for _, fe := range fielderr.All(e.Validate()) {
		if !slices.Contains(unparsed, fe.Field) {
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &e, nil
}
