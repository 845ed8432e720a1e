package strobe

import (
	"net"
	"net/netip"
	"sync"
)

// maxResolved bounds the cache of resolved host names.
const maxResolved = 4096

// addrCache turns Send addresses into netip.AddrPort for the UDP
// transports. Literal addresses are parsed on every call (cheap, no
// lookup); host names are resolved once and cached, so a DNS query never
// sits on the strobe path. IPv4-mapped addresses are unmapped. Safe for
// concurrent use; the zero value is ready.
type addrCache struct {
	mu sync.Mutex
	m  map[string]netip.AddrPort // host names only
}

func (c *addrCache) resolve(to string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(to); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	c.mu.Lock()
	ap, ok := c.m[to]
	c.mu.Unlock()
	if ok {
		return ap, nil
	}
	ua, err := net.ResolveUDPAddr("udp", to)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ap = netip.AddrPortFrom(ua.AddrPort().Addr().Unmap(), ua.AddrPort().Port())
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxResolved {
		c.m = make(map[string]netip.AddrPort)
	}
	c.m[to] = ap
	c.mu.Unlock()
	return ap, nil
}
