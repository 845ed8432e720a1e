package strobe

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/internal/mono"
)

func TestUDPTransport(t *testing.T) {
	checkLeaks(t)
	a, err := ListenUDP("127.0.0.1:0", zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ListenUDP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(b.LocalAddr(), ":0") {
		t.Fatalf("LocalAddr %s: no port picked", b.LocalAddr())
	}
	before := mono.Now()
	if err := a.Send(b.LocalAddr(), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	p := recv(t, b)
	if p.From != a.LocalAddr() || string(p.Data) != "hello" || p.RecvMono < before || p.RecvMono > mono.Now() {
		t.Fatalf("got %+v from %s", p, a.LocalAddr())
	}
	// Host names are resolved (once).
	_, port, _ := net.SplitHostPort(b.LocalAddr())
	for range 2 {
		if err := a.Send("localhost:"+port, []byte("by name")); err != nil {
			t.Fatal(err)
		}
		if p := recv(t, b); string(p.Data) != "by name" {
			t.Fatalf("got %q", p.Data)
		}
	}
	if err := a.Send("no-such-host.invalid:1", []byte("x")); err == nil || !strings.HasPrefix(err.Error(), "strobe: send to") {
		t.Fatalf("send to an unresolvable name: %v", err)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, ok := <-b.Packets(); ok {
		t.Fatal("Packets still open after Close")
	}
	if err := b.Send(a.LocalAddr(), []byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Send after Close = %v", err)
	}
}

func TestListenUDPError(t *testing.T) {
	if _, err := ListenUDP("256.0.0.1:0", nil); err == nil || !strings.HasPrefix(err.Error(), "strobe: listen udp") {
		t.Fatalf("ListenUDP of a bad address: %v", err)
	}
}

// A Served RealtimeUDP waits for strobes in a raw system call that keeps
// its goroutine's P (RealtimeUDP.loop): the runtime still stops the
// world around it. Each stop interrupts the receive with a signal; if it
// could not (a receive the runtime neither knows of nor can interrupt),
// the collections below would wait for a datagram that never comes.
func TestRealtimeServeDoesNotHoldTheWorld(t *testing.T) {
	rx, err := ListenUDPRealtime("127.0.0.1:0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	rx.KeepProcessor()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rx.Serve(ctx, func(Packet) {}) }()
	defer func() {
		cancel()
		rx.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // Serve blocked in its receive
	for i := range 5 {
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			runtime.GC() // stops the world twice
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms) // and once more
		}()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("collection %d did not finish: the receive holds the world", i)
		}
		time.Sleep(15 * time.Millisecond) // past the runtime's 10 ms preemption mark
	}
}
