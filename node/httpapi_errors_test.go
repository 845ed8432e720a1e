package node

import (
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

// isJSON reports whether a Content-Type is JSON, as the API always answers.
func isJSON(contentType string) bool {
	ct, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}
