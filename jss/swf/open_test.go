package swf

import (
	"context"
	"errors"
	"io/fs"
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

// OpenInput reads standard input for "-" and refuses a directory or a
// missing file with an *fs.PathError naming it.
func TestOpenInput(t *testing.T) {
	r, c, err := OpenInput(context.Background(), StdinPath, strings.NewReader("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 -1 -1 -1\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rec, err := r.Next(); err != nil || rec.JobNumber != 1 {
		t.Errorf("first record %+v, %v", rec, err)
	}
	dir := t.TempDir()
	var pe *fs.PathError
	if _, _, err := OpenInput(context.Background(), dir, nil); !errors.As(err, &pe) || !errors.Is(err, ErrDirectory) || pe.Path != dir {
		t.Errorf("a directory: %v", err)
	}
	missing := filepath.Join(dir, "none.swf")
	if _, _, err := OpenInput(context.Background(), missing, nil); !errors.As(err, &pe) || pe.Op != "stat" || pe.Path != missing {
		t.Errorf("a missing file: %v", err)
	}
	if InputName(StdinPath) != StdinName || InputName(filepath.Join(dir, "a.swf")) != "a.swf" {
		t.Errorf("names %q %q", InputName(StdinPath), InputName(filepath.Join(dir, "a.swf")))
	}
}
