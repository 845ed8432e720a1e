package now

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	var out []Policy
	var unknown []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		p, err := ParsePolicy(name)
		switch {
		case err != nil:
			unknown = append(unknown, strconv.Quote(name))
		case !slices.Contains(out, p):
			out = append(out, p)
		}
	}
	switch {
	case len(unknown) == 1:
		return nil, fmt.Errorf("now: unknown policy %s (valid: %s)", unknown[0], PolicyList())
	case len(unknown) > 1:
		return nil, fmt.Errorf("now: unknown policies %s (valid: %s)", strings.Join(unknown, ", "), PolicyList())
	case len(out) == 0:
		return nil, fmt.Errorf("now: no policy given (valid: %s)", PolicyList())
	}
	return out, nil
}
