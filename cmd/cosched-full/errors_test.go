package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Errors a user can act on: the file and line, not the packages that
// passed the error up; "not an SWF file" and "not gzip" said as such; a
// server that is not cosched's named as such.
func TestErrorTexts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	trunc := write("trunc.swf", "; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 -1 10 2\n")
	notSWF := write("notes.txt", "hello\n")
	notGz := write("trace.swf.gz", "hello\n")
	badGz := write("bad.gz", "\x1f\x8bxxxx")
	dropped := write("dropped.swf", "; MaxProcs: 8\n1 0 -1 100 16 -1 -1 16 100 -1 1 1 1 -1 -1 -1 -1 -1\n2 0 -1 -1 4 -1 -1 4 100 -1 1 1 1 -1 -1 -1 -1 -1\n")
	empty := write("empty.swf", "; MaxProcs: 8\n")
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>hello</html>")
	}))
	defer html.Close()
	addr := strings.TrimPrefix(html.URL, "http://")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--trace", trunc, "--policy", "easy"}, "cosched: " + trunc + ":3: expected 18 fields, got 5\n"},
		{[]string{"sim", "--trace", trunc, "--policy", "easy,fcfs"}, "cosched: " + trunc + ":3: expected 18 fields, got 5\n"},
		{[]string{"sim", "--trace", notSWF}, "cosched: " + notSWF + ":1: not an SWF file (no header, and this is no job line: expected 18 fields, got 1)\n"},
		{[]string{"sim", "fit", "--trace", notSWF}, "cosched: " + notSWF + ":1: not an SWF file"},
		{[]string{"sim", "--trace", notGz, "--policy", "easy"}, "cosched: read " + notGz + ": not gzip (no gzip header) and not an SWF file\n"},
		{[]string{"sim", "--trace", badGz, "--policy", "easy"}, "cosched: read " + badGz + ": not gzip: corrupt gzip header"},
		// A bad trace is the trace's error, said once, not a policy's.
		{[]string{"sim", "--trace", badGz, "--policy", "easy,fcfs,conservative"}, "cosched: read " + badGz + ": not gzip: corrupt gzip header (unexpected EOF)\n"},
		// No job to simulate is a failure that says why.
		{[]string{"sim", "--trace", dropped, "--policy", "easy,fcfs"}, "cosched: " + dropped + ": no job to simulate: 2 read, every one dropped: 1 wider than the machine (--procs), 1 with no runtime\n"},
		{[]string{"sim", "--trace", empty}, "cosched: " + empty + ": no job to simulate: the trace has no job lines\n"},
		{[]string{"queue", "--addr", addr}, "cosched: the server at " + addr + " is not a cosched agent (HTTP 200 text/html)\n"},
		{[]string{"cancel", "--addr", addr, "3"}, "cosched: the server at " + addr + " is not a cosched agent (HTTP 200 text/html)\n"},
	} {
		code, _, stderr := cosched(t, "", tc.args...)
		if code != 1 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s\nwant:\n%s", tc.args, code, stderr, tc.want)
		}
		if strings.Contains(stderr, "jss: ") || strings.Contains(stderr, " swf: ") || strings.Contains(stderr, "<html>") {
			t.Errorf("%v: internal prefix or page in %q", tc.args, stderr)
		}
	}
}
