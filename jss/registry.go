package jss

import (
	"fmt"
	"strings"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/internal/textvalue"
)

// The simulator's policies beyond the matrix core's (gang.Policies).
const (
	PolicyPFCFS     = gang.Policy(pfcfs.Name)    // preemptive FCFS, gang/pfcfs
	PolicyEQSpatial = gang.Policy(EQSpatialName) // equipartition on hosts
)

// Engine names the core and the loop that run a policy.
type Engine string

// The engines.
const (
	// EngineMatrix is gang.Scheduler: the event loop in mode space, the
	// slice-stepped engine in gang and bcs.
	EngineMatrix Engine = "matrix"
	// EnginePFCFS is gang/pfcfs on the same event loop (RunPFCFS).
	EnginePFCFS Engine = "pfcfs"
	// EngineHosts is gang/hosts and EQspatial on a machine of hosts
	// (RunHosts).
	EngineHosts Engine = "hosts"
)

// PolicyInfo is one entry of the registry.
type PolicyInfo struct {
	Policy gang.Policy
	Engine Engine
	// SpaceSharing policies run in mode space only.
	SpaceSharing bool
	// HostsOnly policies need a machine of hosts (a machine file).
	HostsOnly bool
}

// Policies is the registry of every policy the simulator runs, by name,
// as Nomad's BuiltinSchedulers is of its schedulers: the matrix core's
// policies (gang.Policies), then pfcfs and eqspatial. The CLI's --policy
// and the sweep resolve names here.
func Policies() []PolicyInfo {
	var out []PolicyInfo
	for _, p := range gang.Policies() {
		out = append(out, PolicyInfo{Policy: p, Engine: EngineMatrix})
	}
	return append(out,
		PolicyInfo{Policy: PolicyPFCFS, Engine: EnginePFCFS, SpaceSharing: true},
		PolicyInfo{Policy: PolicyEQSpatial, Engine: EngineHosts, SpaceSharing: true, HostsOnly: true})
}

// LookupPolicy resolves a policy name (any case, surrounding space
// ignored); the error lists the valid names.
func LookupPolicy(name string) (PolicyInfo, error) {
	name = strings.TrimSpace(name)
	for _, p := range Policies() {
		if strings.EqualFold(string(p.Policy), name) {
			return p, nil
		}
	}
	return PolicyInfo{}, fmt.Errorf("unknown policy %q (valid: %s)", name, PolicyNames())
}

// PolicyNames lists the registry's names, comma-separated.
func PolicyNames() string {
	var names []string
	for _, p := range Policies() {
		names = append(names, string(p.Policy))
	}
	return strings.Join(names, ", ")
}

// ParsePolicies resolves a comma-separated list of policy names
// (LookupPolicy), keeping their order and dropping repeats. Every unknown
// name is named in the error; a list naming none is an error too.
func ParsePolicies(list string) ([]gang.Policy, error) {
	return textvalue.Names(list, "policy", "policies", PolicyNames(), func(name string) (gang.Policy, error) {
		info, err := LookupPolicy(name)
		return info.Policy, err
	})
}
