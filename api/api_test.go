package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/telemetry"
)

// An address that reaches another HTTP server is reported as such, not as
// the server's page.
func TestClientNotAnAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><body>Welcome to nginx!</body></html>")
	}))
	defer srv.Close()
	c := NewClient(strings.TrimPrefix(srv.URL, "http://"))
	_, err := c.Jobs(context.Background(), false)
	var na *NotAgentError
	want := "the server at " + c.Addr() + " is not a cosched agent (HTTP 200 text/html)"
	if !errors.As(err, &na) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// The API's JSON uses one key style, snake_case, down to the strobe and
// relay statistics of GET /v1/nodes?stats=1 and GET /v1/local/stats.
func TestAPIKeysAreSnakeCase(t *testing.T) {
	rep := NodesReport{
		Nodes: []NodeInfo{{Jobs: []int64{1}, Stats: &NodeStats{
			Strobe:  telemetry.FollowerStats{Peers: map[string]telemetry.PeerHeartbeat{"a0": {}}, Targets: []string{"a1"}},
			Records: []telemetry.SliceRecord{{}},
		}}},
		Cluster: &ClusterStats{Weights: &gang.Weights{}, Reservations: "1", ReservationMode: gang.Fixed},
		Skew:    &telemetry.SkewStats{},
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b, &v)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k != "a0" && strings.ToLower(k) != k {
					t.Errorf("%s.%s: not snake_case", path, k)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
}
