package node

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestAdvertiseFor(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "10.1.2.3", "node7.example", "fd00::5"} {
		if got, err := advertiseFor(host); err != nil || got != host {
			t.Errorf("advertiseFor(%q) = %q, %v; want the host itself", host, got, err)
		}
	}
	mine := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			mine[p.Addr().Unmap()] = true
		}
	}
	for _, tc := range []struct {
		bind string
		v4   bool
	}{{"0.0.0.0", true}, {"", true}, {"::", false}} {
		got, err := advertiseFor(tc.bind)
		if err != nil {
			// Only acceptable when the machine has no such address.
			if !strings.Contains(err.Error(), "--advertise") {
				t.Errorf("advertiseFor(%q): error %v does not say what to do", tc.bind, err)
			}
			for ip := range mine {
				if ip.Is4() == tc.v4 && ip.IsGlobalUnicast() {
					t.Errorf("advertiseFor(%q) failed although %v is here: %v", tc.bind, ip, err)
				}
			}
			continue
		}
		ip, perr := netip.ParseAddr(got)
		if perr != nil || ip.Is4() != tc.v4 || !ip.IsGlobalUnicast() || !mine[ip] {
			t.Errorf("advertiseFor(%q) = %q: want a global unicast address of this machine of the bind's family", tc.bind, got)
		}
	}
}
