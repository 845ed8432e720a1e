package node

import (
	"encoding/json"

	"context"
	"errors"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/strobe"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A wrong method on a known path is 405 with an Allow header; an unknown
// path stays 404. Both answer in JSON.
func TestWrongMethodIs405(t *testing.T) {
	srv := httptest.NewServer((&Agent{}).routes())
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPut, "/v1/jobs", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{http.MethodPost, "/v1/jobs/3", http.StatusMethodNotAllowed, "GET, HEAD, DELETE"},
		{http.MethodDelete, "/v1/nodes", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/v1/nothing", http.StatusNotFound, ""},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow || !isJSON(resp.Header.Get("Content-Type")) {
			t.Errorf("%s %s: %d Allow %q %s: %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), body)
		}
	}
}

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
	want := "the server at " + c.Addr + " is not a cosched agent (HTTP 200 text/html)"
	if !errors.As(err, &na) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// The API's JSON uses one key style, snake_case, down to the strobe and
// relay statistics of GET /v1/nodes?stats=1 and GET /v1/local/stats.
func TestAPIKeysAreSnakeCase(t *testing.T) {
	rep := NodesReport{
		Nodes: []NodeInfo{{Jobs: []int64{1}, Stats: &NodeStats{
			Strobe:  strobe.Stats{Peers: map[string]strobe.PeerHeartbeat{"a0": {}}, Targets: []string{"a1"}},
			Records: []strobe.SliceRecord{{}},
		}}},
		Cluster: &ClusterStats{Weights: &gang.Weights{}, Reservations: "1", ReservationMode: gang.Fixed},
		Skew:    &strobe.SkewStats{},
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
