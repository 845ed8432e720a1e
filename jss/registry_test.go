package jss

import (
	"slices"
	"strings"
	"testing"

	"github.com/cosched/cosched/gang"
)

// Every policy the core knows, pfcfs and eqspatial are in the registry,
// each once, with the engine that runs it; names resolve in any case.
func TestPolicyRegistry(t *testing.T) {
	seen := map[gang.Policy]bool{}
	for _, p := range Policies() {
		if seen[p.Policy] {
			t.Fatalf("%s twice", p.Policy)
		}
		seen[p.Policy] = true
	}
	for _, p := range gang.Policies() {
		if info, err := LookupPolicy(strings.ToUpper(string(p))); err != nil || info.Engine != EngineMatrix || info.SpaceSharing {
			t.Errorf("%s: %+v %v", p, info, err)
		}
	}
	if info, err := LookupPolicy(" pfcfs "); err != nil || info.Engine != EnginePFCFS || !info.SpaceSharing || info.HostsOnly {
		t.Errorf("pfcfs: %+v %v", info, err)
	}
	if info, err := LookupPolicy("EQSpatial"); err != nil || info.Engine != EngineHosts || !info.HostsOnly {
		t.Errorf("eqspatial: %+v %v", info, err)
	}
	if _, err := LookupPolicy("nope"); err == nil || !strings.Contains(err.Error(), "pfcfs, eqspatial") {
		t.Errorf("unknown policy: %v", err)
	}
}

// A --policy list: order kept, repeats and blanks dropped, any case; the
// first unknown name, or no name at all, is the error.
func TestParsePolicies(t *testing.T) {
	got, err := ParsePolicies("fcfs, PFCFS,,fcfs,eqspatial")
	if want := []gang.Policy{gang.FCFS, PolicyPFCFS, PolicyEQSpatial}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParsePolicies = %v, %v; want %v", got, err, want)
	}
	if _, err := ParsePolicies("easy,lifo"); err == nil || !strings.Contains(err.Error(), `unknown policy "lifo" (valid: fcfs,`) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := ParsePolicies("lifo,easy, fifo"); err == nil || !strings.Contains(err.Error(), `unknown policies "lifo", "fifo" (valid: fcfs,`) {
		t.Errorf("unknown policies: %v", err)
	}
	if _, err := ParsePolicies(" , "); err == nil || !strings.Contains(err.Error(), "no policy given (valid: fcfs,") {
		t.Errorf("empty list: %v", err)
	}
}
