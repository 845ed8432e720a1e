package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// netnsUsable says why network namespaces cannot be used here, or "".
func netnsUsable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "ip (iproute2) not installed"
	}
	probe := fmt.Sprintf("cosched-probe-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add fails here: %v: %s", err, bytes.TrimSpace(out))
	}
	exec.Command("ip", "netns", "del", probe).Run()
	return ""
}

// cluster.sh up 3 builds three namespaces on a bridge with an agent in
// each; the controller sees them at their own addresses, a job spanning
// all three completes, and down leaves no agent, namespace, veth or bridge,
// twice in a row.
func TestNetnsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agents")
	}
	if why := netnsUsable(); why != "" {
		t.Skip("network namespaces: " + why + " (run as root where ip netns works)")
	}
	bin := buildCosched(t)
	state := t.TempDir()
	// A name and subnet of this test's own, so a cluster someone runs by
	// hand on this host is left alone.
	name := fmt.Sprintf("ct%d", os.Getpid()%1000000)
	subnet := fmt.Sprintf("10.77.%d", 100+os.Getpid()%100)
	if out, _ := exec.Command("ip", "route").Output(); strings.Contains(string(out), subnet+".0/24") {
		t.Skipf("subnet %s.0/24 is in use here", subnet)
	}
	env := []string{"COSCHED=" + bin, "COSCHED_NETNS_NAME=" + name, "COSCHED_NETNS_SUBNET=" + subnet, "COSCHED_NETNS_STATE=" + state}
	run := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"netns/cluster.sh"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	leftovers := func() []string {
		var left []string
		ns, _ := exec.Command("ip", "netns", "list").Output()
		for _, line := range strings.Split(string(ns), "\n") {
			if strings.HasPrefix(line, name+"-") {
				left = append(left, "namespace "+strings.Fields(line)[0])
			}
		}
		links, _ := filepath.Glob("/sys/class/net/" + name + "-*")
		for _, l := range links {
			left = append(left, "link "+filepath.Base(l))
		}
		for _, pid := range append(agentsUnder(state), guardsUnder(state)...) {
			left = append(left, fmt.Sprintf("%s pid %d", coschedProc(pid), pid))
		}
		return left
	}
	t.Cleanup(func() {
		if out, err := run("down"); err != nil {
			t.Errorf("cleanup: down: %v\n%s", err, out)
		}
		if left := leftovers(); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
		killAgentsUnder(t, state)
	})

	out, err := run("up", "3", "--mode", "gang", "--slice", "10ms", "--mpl", "2", "--realtime-priority", "0")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	api := subnet + ".1:8080"
	if !strings.Contains(out, "controller n0 at "+api) {
		t.Errorf("up says:\n%s", out)
	}
	nodes := waitNodesUp(t, bin, api, 3)
	for _, n := range []string{"n0*", "n1", "n2"} {
		if !strings.Contains(nodes, n+" ") {
			t.Errorf("nodes: no %s:\n%s", n, nodes)
		}
	}
	// Every agent has the address of its own namespace.
	for i := 0; i < 3; i++ {
		b, _ := os.ReadFile(filepath.Join(state, fmt.Sprintf("n%d", i), "ready.json"))
		if want := fmt.Sprintf(`"gossip":"%s.%d:7946"`, subnet, i+1); !strings.Contains(string(b), want) {
			t.Errorf("n%d's ready file %s lacks %s", i, b, want)
		}
	}
	if out, err := run("up", "2"); err == nil || !strings.Contains(out, "exist already") {
		t.Errorf("a second up: %v\n%s", err, out)
	}

	sub := exec.Command(bin, "submit", "--addr", api, "-n", "3", "--bench", "10ms,5ms,barrier,B", "--iterations", "20", "--parsable")
	idb, err := sub.CombinedOutput()
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, idb)
	}
	id := strings.TrimSpace(string(idb))
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, _ := exec.Command(bin, "queue", "--all", "--addr", api).CombinedOutput()
		var f []string
		for _, line := range strings.Split(string(q), "\n") {
			if g := strings.Fields(line); len(g) > 0 && g[0] == id {
				f = g
			}
		}
		// JOBID [NAME] ST TIME NODES NODELIST
		if len(f) >= 5 && f[len(f)-4] == "CD" {
			if got := strings.Split(f[len(f)-1], ","); len(got) != 3 || !slices.Contains(got, "n0") || !slices.Contains(got, "n1") || !slices.Contains(got, "n2") {
				t.Errorf("job %s ran on %s, want n0,n1,n2", id, f[len(f)-1])
			}
			break
		}
		if len(f) >= 5 && f[len(f)-4] != "R" && f[len(f)-4] != "PD" {
			t.Fatalf("job %s ended %s:\n%s", id, f[len(f)-4], q)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not done after 30 s:\n%s", id, q)
		}
		time.Sleep(100 * time.Millisecond)
	}

	for i := 0; i < 2; i++ { // down is idempotent
		if out, err := run("down"); err != nil || !strings.Contains(out, "stopped") {
			t.Fatalf("down #%d: %v\n%s", i+1, err, out)
		}
		if left := leftovers(); len(left) > 0 {
			t.Fatalf("after down #%d: %v", i+1, left)
		}
	}
}
