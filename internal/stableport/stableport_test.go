package stableport

import (
	"net"
	"slices"
	"strconv"
	"testing"
)

// The ports are distinct, free (each can be bound), and below the
// ephemeral range, which no outgoing connection takes its source port from.
func TestPickBelowTheEphemeralRange(t *testing.T) {
	ports, err := Pick(4)
	if err != nil {
		t.Fatal(err)
	}
	low := ephemeralLow()
	sorted := slices.Clone(ports)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != 4 {
		t.Fatalf("ports %v: want 4 distinct", ports)
	}
	for _, p := range ports {
		if p < base || (low > base+1000 && p >= low) {
			t.Errorf("port %d outside [%d, %d)", p, base, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		ln.Close()
	}
}
