package now

import (
	"fmt"
	"strings"

	"github.com/cosched/cosched/internal/textvalue"
)

// Policy names a queue policy. See the package documentation for the rules.
type Policy string

// The policies.
const (
	FIFO         Policy = "fifo"
	FirstFit     Policy = "firstfit"
	Random       Policy = "random"
	LPT          Policy = "lpt"
	SPT          Policy = "spt"
	FIFOBackfill Policy = "fifo-bf"
)

// Policies lists every policy, in a stable order.
func Policies() []Policy {
	return []Policy{FIFO, FirstFit, Random, LPT, SPT, FIFOBackfill}
}

// PolicyList is the policies' names joined by ", ", for messages.
func PolicyList() string {
	names := make([]string, 0, len(Policies()))
	for _, p := range Policies() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// ParsePolicy resolves a policy name (case-insensitive).
func ParsePolicy(name string) (Policy, error) {
	p := Policy(strings.ToLower(strings.TrimSpace(name)))
	for _, known := range Policies() {
		if p == known {
			return p, nil
		}
	}
	return "", fmt.Errorf("now: unknown policy %q (valid: %s)", name, PolicyList())
}

// ParsePolicies resolves a comma-separated list of policy names
// (ParsePolicy), keeping their order and dropping repeats. Every unknown
// name is named in the error; a list naming none is an error too.
func ParsePolicies(list string) ([]Policy, error) {
	out, err := textvalue.Names(list, "policy", "policies", PolicyList(), ParsePolicy)
	if err != nil {
		return nil, fmt.Errorf("now: %w", err)
	}
	return out, nil
}
