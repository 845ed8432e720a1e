package swf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A file opened with OpenContext stops being read once its context is
// cancelled, with the context's cause.
func TestOpenContextStopsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.swf")
	var b strings.Builder
	b.WriteString("; MaxProcs: 4\n")
	for i := 1; i <= 50000; i++ {
		b.WriteString(strconv.Itoa(i) + " 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 -1 -1 -1\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r, c, err := OpenContext(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := r.Next(); err != nil {
		t.Fatalf("first record: %v", err)
	}
	stop := errors.New("stopped")
	cancel(stop)
	for {
		_, err := r.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, stop) {
			t.Fatalf("after cancel: %v, want the cause %v", err, stop)
		}
		return
	}
}
