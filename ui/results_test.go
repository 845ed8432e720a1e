package ui

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The results server lists the folder's CSV files (top and MODE/, not the
// agents' state below) and serves those only; a folder without any is
// refused naming it.
func TestResultsServesOnlyItsCSVFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewResults(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("empty folder: %v, want an error naming it", err)
	}
	if _, err := NewResults(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing folder was accepted")
	}
	write("results.csv", "mode,load,mean_response\nspace,0.5,1.5\n")
	write("gang/jobs.csv", "seq,id,response_s\n0,1,2.5\n")
	write("gang/state/a0/secret.csv", "k\nv\n")
	write("notes.txt", "not served")
	res, err := NewResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(res.Handler())
	defer srv.Close()
	get := func(p string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/api/files")
	var list struct{ Files []ResultFile }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Files) != 2 ||
		list.Files[0].Path != "gang/jobs.csv" || list.Files[1].Path != "results.csv" || list.Files[1].Header[2] != "mean_response" {
		t.Fatalf("/api/files: %d %s", code, body)
	}
	if code, body := get("/data/gang/jobs.csv"); code != http.StatusOK || !strings.Contains(body, "2.5") {
		t.Errorf("listed file: %d %q", code, body)
	}
	for _, p := range []string{"/data/notes.txt", "/data/gang/state/a0/secret.csv", "/data/../results.csv", "/data/%2e%2e/etc/passwd"} {
		if code, _ := get(p); code == http.StatusOK {
			t.Errorf("GET %s: 200, want refused", p)
		}
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "results.js") {
		t.Errorf("page: %d", code)
	}
}
