package closed

import (
	"slices"
	"testing"

	"github.com/cosched/cosched/internal/fielderr"
)

func goodSettings() Settings {
	return Settings{Experiment: Experiment{Procs: 8, IOMean: 0.5, Warmup: 10, Completions: 100, Replications: 2, Seed: 1},
		JobList: "2,4,2", PolicyList: "fcfs, ljfs", CV: 1, ServiceMean: 1}
}

func TestSettingsParse(t *testing.T) {
	e, err := goodSettings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Jobs, []int{2, 4}) || !slices.Equal(e.Policies, []Policy{FCFS, LJFS}) || e.Service != (Service{Dist: Exponential, Mean: 1, CV: 1}) || e.Procs != 8 {
		t.Errorf("experiment %+v", e)
	}
}

// Every problem is keyed by the Experiment's field; a list that did not
// parse is not also reported as missing.
func TestSettingsParseKeysEveryProblem(t *testing.T) {
	s := goodSettings()
	s.JobList, s.PolicyList, s.Dist, s.Procs, s.Replications = "0,x", "sjf", "gamma", 0, 1
	_, err := s.Parse()
	var got []string
	for _, e := range fielderr.All(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`Jobs "0": want a whole number of jobs in 1..1048576`, `Jobs "x": want a whole number of jobs in 1..1048576`,
		`Policies "sjf": unknown policy (valid: fcfs, afcfs, ljfs)`, `Service.Dist "gamma": unknown (valid: ` + DistNames() + ")",
		"Procs 0: must be from 1 to 65536", "Replications 1: must be from 2 to 100000 (a confidence interval needs at least 2)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%q\nwant\n%q", got, want)
	}
}
