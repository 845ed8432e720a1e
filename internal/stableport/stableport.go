// Package stableport picks loopback ports for addresses an agent binds
// again when it restarts (a controller's journal port): free now, and
// below the kernel's ephemeral range. A port from that range, free while
// its agent is down, can become the source port of any outgoing
// connection meanwhile (a client's, another agent's), and the restarted
// agent's bind then fails with "address already in use".
package stableport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// base is the lowest port picked: above the well-known and most
// registered services.
const base = 10000

// Pick returns n distinct loopback TCP ports nothing listens on now,
// below the ephemeral range where the range leaves room (else anywhere).
func Pick(n int) ([]int, error) {
	low := ephemeralLow()
	if low <= base+1000 {
		return anywhere(n)
	}
	var ports []int
	start := rand.IntN(low - base) // clusters started at once pick apart
	for i := 0; i < low-base && len(ports) < n; i++ {
		port := base + (start+i)%(low-base)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("stableport: only %d free ports below %d, want %d", len(ports), low, n)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768,
// Linux's default, when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < 1024 || low > 65535 {
		return 32768
	}
	return low
}

// anywhere picks n distinct ports from the kernel (all held until each is
// chosen: a port closed early may be handed out again).
func anywhere(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
