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

func TestInterruptibleReturnsWhileBlocked(t *testing.T) {
	r, w := io.Pipe() // nobody writes: a Read blocks
	defer w.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	in := Interruptible(ctx, r)
	go func() {
		w.Write([]byte("ab"))
	}()
	buf := make([]byte, 8)
	if n, err := in.Read(buf); n != 2 || err != nil || string(buf[:2]) != "ab" {
		t.Fatalf("read: %d %v %q", n, err, buf[:n])
	}
	stop := errors.New("SIGTERM received")
	got := make(chan error, 1)
	go func() {
		_, err := in.Read(buf)
		got <- err
	}()
	cancel(stop)
	if err := <-got; !errors.Is(err, stop) {
		t.Fatalf("blocked read after cancel: %v", err)
	}
	if _, err := in.Read(buf); !errors.Is(err, stop) {
		t.Fatalf("read after cancel: %v", err)
	}
	r.Close() // ends the abandoned read
}
