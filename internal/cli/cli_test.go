package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cosched runs the light binary's command tree in-process, built for args
// as its main builds it, and returns its exit status and output.
func cosched(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), NewLightRoot(args), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// writeFile writes text to a new file name in a temporary directory and
// returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
