package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/sharing"
)

// netnsEnv names the network namespace a re-executed test runs in.
const netnsEnv = "COSCHED_TEST_NETNS"

// inMulticastNetns runs test name of this binary again inside a network
// namespace of its own whose loopback carries multicast, and reports its
// result; it returns true in that child, where the test's body runs. It
// skips without root or the ip command.
func inMulticastNetns(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv(netnsEnv) != "" {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	ns := fmt.Sprintf("i17-barrier-agents-%d", os.Getpid())
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up", "multicast", "on"},
		{"-n", ns, "route", "add", "224.0.0.0/4", "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
		if args[0] == "netns" {
			t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
		}
	}
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsEnv+"="+ns)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in namespace %s: %v\n%s", name, ns, err, out)
	}
	t.Logf("%s", out)
	return false
}

// Agents started with a strobe multicast group: the controller sends each
// strobe once, to the group, and never to an agent's own address, so
// every agent that applies slices has them from the group. With the
// cluster key, strobes are sealed, and opened from the group as from
// unicast. With a real-time priority, the group is read (and the switch
// made) on a SCHED_FIFO thread, as unicast strobes are.
func TestAgentsStrobeMulticast(t *testing.T) {
	if !inMulticastNetns(t, "TestAgentsStrobeMulticast") {
		return
	}
	c := startCluster(t, clusterOpts{agents: 3, mode: sharing.Gang, mpl: 2, slice: 20 * time.Millisecond, multicast: "239.77.1.1:17951", key: newKey(t), priority: 50})
	eventually(t, 20*time.Second, func() error {
		for _, a := range c.agents {
			st, err := api.NewKeyClient(c.opts.key, a.APIAddr()).LocalStats(context.Background(), ^uint64(0))
			if err != nil {
				return err
			}
			if st.Strobe.Applied < 20 {
				return fmt.Errorf("%s applied %d slices", a.Name(), st.Strobe.Applied)
			}
			if st.Realtime != "SCHED_FIFO 50" {
				t.Fatalf("%s: strobes received at %q, want SCHED_FIFO 50", a.Name(), st.Realtime)
			}
			if st.Strobe.Multicast < st.Strobe.Applied {
				t.Fatalf("%s applied %d slices, %d strobes from the group: the others came by unicast", a.Name(), st.Strobe.Applied, st.Strobe.Multicast)
			}
		}
		return nil
	})
	for _, a := range c.agents {
		st, _ := api.NewKeyClient(c.opts.key, a.APIAddr()).LocalStats(context.Background(), ^uint64(0))
		t.Logf("%s: applied %d, lost %d, late %d, from the group %d", a.Name(), st.Strobe.Applied, st.Strobe.Lost, st.Strobe.Late, st.Strobe.Multicast)
	}
}
