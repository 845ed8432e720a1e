package jss

import (
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
