package node_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/strobe"
)

// sniffUDP returns the payload of the next UDP datagram to addr
// (127.0.0.1:port) seen on the loopback interface, captured with a packet
// socket (needs CAP_NET_RAW): what an attacker on the network sees.
func sniffUDP(t *testing.T, addr string) []byte {
	t.Helper()
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, int(htons(unix.ETH_P_IP)))
	if err != nil {
		t.Skipf("packet socket (needs CAP_NET_RAW): %v", err)
	}
	defer unix.Close(fd)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: lo.Index}); err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			continue // timeout: look again
		}
		ip := buf[:n]
		if n < 20 || ip[0]>>4 != 4 || ip[9] != unix.IPPROTO_UDP {
			continue
		}
		hl := int(ip[0]&0xf) * 4
		if n < hl+8 || int(binary.BigEndian.Uint16(ip[hl+2:])) != port {
			continue
		}
		return append([]byte(nil), ip[hl+8:]...)
	}
	t.Fatalf("no datagram to %s on lo", addr)
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// metricSample is the value of one sample (name and labels) of the agent's /metrics.
func metricSample(t *testing.T, apiAddr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no sample %s on /metrics", sample)
	return 0
}

// TestForgedAndReplayedStrobes: agents with the cluster key, over their
// real UDP sockets. A strobe in the right format sealed with another key
// (a newer epoch and a slice far ahead, which would switch the row and
// make the live controller stale) and a genuine strobe captured on the
// wire and sent again change nothing on the agent they are sent to; the
// same goes for a captured heartbeat replayed to the controller's agent.
// Each is counted on /metrics, and genuine strobes keep applying.
func TestForgedAndReplayedStrobes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("capturing packets on lo needs root")
	}
	key, err := clusterkey.New(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.Gang, mpl: 2, key: key})
	ctx := context.Background()
	n0, n1 := c.agents[0], c.agents[1]
	n1Client := api.NewKeyClient(key, n1.APIAddr())
	stats := func() strobe.Stats {
		t.Helper()
		st, err := n1Client.LocalStats(ctx, ^uint64(0))
		if err != nil {
			t.Fatal(err)
		}
		return st.Strobe
	}
	eventually(t, 20*time.Second, func() error {
		if s := stats(); s.Applied < 3 {
			return fmt.Errorf("%d strobes applied", s.Applied)
		}
		return nil
	})
	strobeAddr, _ := node.StrobeAddrs(n1)
	_, ctlHeartbeats := node.StrobeAddrs(n0)
	genuine := sniffUDP(t, strobeAddr)
	heartbeat := sniffUDP(t, ctlHeartbeats)
	if !strings.HasPrefix(string(genuine), "cK") || !strings.HasPrefix(string(heartbeat), "cK") {
		t.Fatalf("unsealed on the wire: strobe %x, heartbeat %x", genuine, heartbeat)
	}

	attacker, err := strobe.ListenUDP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	wrongKey, _ := clusterkey.New(rand.Reader)
	before := stats()
	forger := strobe.NewSender(attacker, before.Epoch+1, nil)
	forger.SetAuth(strobe.NewAuth(wrongKey, n0.Name()))
	if _, err := forger.Strobe([]string{strobeAddr}, before.LastSeq+1000, 1, before.MemberEpoch, 0); err != nil {
		t.Fatal(err)
	}
	if err := attacker.Send(strobeAddr, genuine); err != nil {
		t.Fatal(err)
	}
	if err := attacker.Send(ctlHeartbeats, heartbeat); err != nil {
		t.Fatal(err)
	}

	eventually(t, 20*time.Second, func() error {
		s := stats()
		if s.StrobesForged != 1 || s.StrobesReplayed != 1 {
			return fmt.Errorf("forged %d, replayed %d", s.StrobesForged, s.StrobesReplayed)
		}
		if s.Applied < before.Applied+3 {
			return fmt.Errorf("genuine strobes stopped applying: %d since", s.Applied-before.Applied)
		}
		return nil
	})
	after := stats()
	if after.Epoch != before.Epoch || after.Epochs != before.Epochs || after.Stale != 0 ||
		after.Late != before.Late || after.Lost >= before.Lost+999 || after.Malformed != 0 || after.Unknown != 0 {
		t.Errorf("the forged or replayed strobe changed the agent's slice clock:\nbefore %+v\nafter  %+v", before, after)
	}
	if v := metricSample(t, n1.APIAddr(), `cosched_packets_forged_total{kind="strobe",node="n1"}`); v != 1 {
		t.Errorf("forged strobes on /metrics: %v", v)
	}
	if v := metricSample(t, n1.APIAddr(), `cosched_packets_replayed_total{kind="strobe",node="n1"}`); v != 1 {
		t.Errorf("replayed strobes on /metrics: %v", v)
	}
	eventually(t, 20*time.Second, func() error {
		if v := metricSample(t, n0.APIAddr(), `cosched_packets_replayed_total{kind="heartbeat",node="n0"}`); v != 1 {
			return fmt.Errorf("replayed heartbeats on the controller's agent's /metrics: %v", v)
		}
		return nil
	})
}
