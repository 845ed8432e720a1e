package ctxio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var out bytes.Buffer
	w := Writer(ctx, &out)
	r := Reader(ctx, strings.NewReader("abcdef"))
	if n, err := w.Write([]byte("x")); n != 1 || err != nil {
		t.Fatalf("write before cancel: %d %v", n, err)
	}
	buf := make([]byte, 2)
	if n, err := r.Read(buf); n != 2 || err != nil {
		t.Fatalf("read before cancel: %d %v", n, err)
	}
	stop := errors.New("SIGINT received")
	cancel(stop)
	if _, err := w.Write([]byte("y")); !errors.Is(err, stop) {
		t.Errorf("write after cancel: %v", err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, stop) {
		t.Errorf("read after cancel: %v", err)
	}
	if out.String() != "x" {
		t.Errorf("written %q", out.String())
	}
}
