package node_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// refusedLinks is an agent's cosched_connections_refused_total for link.
func refusedLinks(t *testing.T, addr, link string) float64 {
	t.Helper()
	return metricValue(t, addr, `cosched_connections_refused_total{link="`+link+`"`)
}

// metricValue is the value of the first sample on an agent's /metrics
// whose line starts with prefix.
func metricValue(t *testing.T, addr, prefix string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	for _, line := range strings.Split(body.String(), "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			return v
		}
	}
	t.Fatalf("/metrics of %s has no %s", addr, prefix)
	return 0
}

// With a cluster key, control and relay connections from a process
// without it (plain, or with another cluster's key) are refused before
// any frame is applied: the forged launch starts nothing, the agent keeps
// its controller's connection, nothing reaches the relay, the refusals
// are counted; and the cluster works as before, its control and relay
// links authenticated.
func TestUnkeyedLinksRefused(t *testing.T) {
	key := newKey(t)
	c := startCluster(t, clusterOpts{agents: 2, processors: 1, mode: sharing.Space, key: key})
	n1 := c.agents[1]
	eventually(t, 10*time.Second, func() error {
		if node.ControlPeer(n1) == "" {
			return fmt.Errorf("n1 has no controller yet")
		}
		return nil
	})
	peer := node.ControlPeer(n1)

	marker := []string{"sleep", "1000"}
	if err := node.ForgeLaunch(n1, nil, 9999, marker); err == nil {
		t.Error("plain control connection accepted")
	}
	if err := node.ForgeLaunch(n1, newKey(t), 9999, marker); err == nil {
		t.Error("control connection with another key accepted")
	}
	// A raw peer hello and message on the relay's port.
	raw, err := net.Dial("tcp", node.RelayAddr(n1))
	if err != nil {
		t.Fatal(err)
	}
	frame.Write(raw, 1, map[string]string{"n": "n0"})
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); err == nil {
		t.Error("the relay answered a plain connection")
	}
	raw.Close()
	eventually(t, 10*time.Second, func() error {
		if got := refusedLinks(t, n1.APIAddr(), "control"); got != 2 {
			return fmt.Errorf("control refusals %v, want 2", got)
		}
		if got := refusedLinks(t, n1.APIAddr(), "relay"); got != 1 {
			return fmt.Errorf("relay refusals %v, want 1", got)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // a launch, had it been applied, would have started by now
	if pids, err := proctest.JobPIDs(9999, func(proctest.Rank) bool { return true }); err != nil || len(pids) != 0 {
		t.Errorf("a forged launch started %v (%v)", pids, err)
	}
	if got := node.ControlPeer(n1); got != peer {
		t.Errorf("n1's control connection is now from %q, was %q", got, peer)
	}

	// The cluster works as before: a job across both agents.
	id := c.submit(api.JobSpec{Name: "after", Command: scenarioCommand("semantics"), Processors: 2})
	if j := waitDone(t, c, id, 60*time.Second); j.State != api.Completed {
		t.Fatalf("job after the intruders: %s (%s)", j.State, j.Reason)
	}
	var received uint64
	for _, a := range c.agents {
		st, err := api.NewKeyClient(key, a.APIAddr()).LocalStats(context.Background(), ^uint64(0))
		if err != nil {
			t.Fatal(err)
		}
		received += st.Relay.Received
	}
	if received == 0 {
		t.Error("no message crossed the keyed relay link")
	}
}

// With a /metrics listener of its own, /metrics is served there without a
// credential, and on the API port only to authenticated callers.
func TestMetricsListener(t *testing.T) {
	key := newKey(t)
	c := startCluster(t, clusterOpts{agents: 1, mode: sharing.Space, key: key,
		configure: func(cfg *node.Config) { cfg.MetricsListen = "127.0.0.1:0" }})
	a := c.agents[0]
	get := func(url string, token bool) int {
		req, _ := http.NewRequest("GET", url, nil)
		if token {
			tok, err := key.Mint(0, 0, time.Now(), time.Minute, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", api.AuthScheme+" "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a.MetricsAddr() == "" {
		t.Fatal("no metrics listener")
	}
	for _, tc := range []struct {
		url   string
		token bool
		want  int
	}{
		{"http://" + a.MetricsAddr() + "/metrics", false, http.StatusOK},
		{"http://" + a.MetricsAddr() + "/v1/jobs", false, http.StatusNotFound}, // metrics only
		{"http://" + a.APIAddr() + "/metrics", false, http.StatusUnauthorized},
		{"http://" + a.APIAddr() + "/metrics", true, http.StatusOK},
	} {
		if got := get(tc.url, tc.token); got != tc.want {
			t.Errorf("GET %s (token %v): %d, want %d", tc.url, tc.token, got, tc.want)
		}
	}
}
