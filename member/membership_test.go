package member

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// member joins a loopback cluster with DefaultLocalConfig. memberlist
// logs from its own goroutines, possibly after a test ends, so the logs
// go to an observer rather than to t.
func member(t *testing.T, name string, join []string, key []byte) (*Membership, error) {
	t.Helper()
	cfg := DefaultLocalConfig()
	cfg.Name = name
	cfg.Join = join
	cfg.SecretKey = key
	core, _ := observer.New(zapcore.DebugLevel)
	cfg.Log = zap.New(core)
	cfg.Meta = Meta{
		StrobeAddr:  "127.0.0.1:7" + name[len(name)-1:] + "00",
		ControlAddr: "127.0.0.1:7001",
		APIAddr:     "127.0.0.1:8080",
		CPUs:        2,
		Controller:  name == "m1",
	}
	return Join(context.Background(), cfg)
}

func mustMember(t *testing.T, name string, join []string, key []byte) *Membership {
	t.Helper()
	m, err := member(t, name, join, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return m
}

func names(ms []Meta) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return strings.Join(out, ",")
}

// waitEvent reads events from m until one matches.
func waitEvent(t *testing.T, m *Membership, what string, match func(Event) bool) Event {
	t.Helper()
	timeout := time.After(30 * time.Second) // a hang detector: above DetectionBound(3)
	for {
		select {
		case ev, ok := <-m.Events():
			if !ok {
				t.Fatalf("Events closed while waiting for %s", what)
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s within 30s", what)
		}
	}
}

func TestMembershipJoinFailAndLeave(t *testing.T) {
	checkLeaks(t)
	key := bytes.Repeat([]byte{7}, 32)
	m1 := mustMember(t, "m1", nil, key)
	m2 := mustMember(t, "m2", []string{m1.Addr()}, key)
	m3, err := member(t, "m3", []string{m1.Addr(), m2.Addr()}, key)
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Shutdown()

	for _, m := range []*Membership{m1, m2, m3} {
		eventually(t, "everyone to see three members", func() bool { return names(m.Members()) == "m1,m2,m3" })
	}
	got := m2.Members()[0]
	want := Meta{Name: "m1", StrobeAddr: "127.0.0.1:7100", ControlAddr: "127.0.0.1:7001", APIAddr: "127.0.0.1:8080", CPUs: 2, Controller: true}
	if got != want {
		t.Fatalf("m2 sees m1 as %+v, want %+v", got, want)
	}
	waitEvent(t, m1, "m1's join event for m3", func(ev Event) bool {
		return ev.Kind == EventJoin && ev.Meta.Name == "m3" && ev.Meta.StrobeAddr == "127.0.0.1:7300"
	})

	// A Meta update reaches the others.
	upd := m3.Members()[2]
	upd.RelayAddr = "127.0.0.1:7302"
	if err := m3.UpdateMeta(upd, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, m2, "m2's update event for m3", func(ev Event) bool {
		return ev.Meta.Name == "m3" && ev.Meta.RelayAddr == "127.0.0.1:7302" && ev.Kind != EventLeave
	})

	// m3 dies without a word: the others declare it failed.
	if err := m3.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := m3.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	for _, m := range []*Membership{m1, m2} {
		ev := waitEvent(t, m, "a leave event for m3", func(ev Event) bool { return ev.Meta.Name == "m3" && ev.Kind == EventLeave })
		if ev.Meta.StrobeAddr != "127.0.0.1:7300" {
			t.Fatalf("leave event %+v: want m3's last meta", ev)
		}
	}
	eventually(t, "m3 to drop out of Members", func() bool { return names(m1.Members()) == "m1,m2" })
	for range m3.Events() { // closed by Shutdown: the loop ends
	}
	if err := m3.Leave(time.Second); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Leave after Shutdown = %v", err)
	}

	// m2 leaves gracefully: m1 hears at once, with no failure detection.
	if err := m2.Leave(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, m1, "a leave event for m2", func(ev Event) bool { return ev.Meta.Name == "m2" && ev.Kind == EventLeave })
	eventually(t, "m2 to drop out of Members", func() bool { return names(m1.Members()) == "m1" })
}

func TestMembershipWrongKey(t *testing.T) {
	checkLeaks(t)
	m1 := mustMember(t, "m1", nil, bytes.Repeat([]byte{1}, 16))
	cfg := DefaultLocalConfig()
	cfg.Name, cfg.Join, cfg.SecretKey = "m9", []string{m1.Addr()}, bytes.Repeat([]byte{2}, 16)
	cfg.JoinAttempts, cfg.JoinBackoff = 2, 10*time.Millisecond
	m9, err := Join(context.Background(), cfg)
	if err == nil {
		m9.Shutdown()
		t.Fatal("a member with the wrong key joined")
	}
	for _, want := range []string{"member: join", m1.Addr(), "no peer answered in 2 attempts", "SecretKey"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	t.Logf("wrong key: %v", err)
	if got := names(m1.Members()); got != "m1" {
		t.Fatalf("m1 sees %s", got)
	}
	// Without a key at all, likewise.
	cfg.SecretKey = nil
	if m9, err = Join(context.Background(), cfg); err == nil {
		m9.Shutdown()
		t.Fatal("a member without the key joined")
	}
}

func TestConfigErrors(t *testing.T) {
	cfg := Config{
		Bind:      "nonsense",
		Advertise: "node1.example",
		SecretKey: []byte("short"),
		Meta:      Meta{Name: "other"},
	}
	_, err := Join(context.Background(), cfg)
	for _, want := range []string{"member: member config", "empty Name", "bad SecretKey length 5", "Bind", `bad Advertise "node1.example"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not mention %q", err, want)
		}
	}
	cfg = DefaultLocalConfig()
	cfg.Name = "x"
	cfg.Meta = Meta{Name: "y", StrobeAddr: strings.Repeat("h", 600)}
	_, err = Join(context.Background(), cfg)
	for _, want := range []string{"conflicting Meta.Name", "512-byte limit"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not mention %q", err, want)
		}
	}
}

func TestJoinNobodyThere(t *testing.T) {
	checkLeaks(t)
	cfg := DefaultLocalConfig()
	cfg.Name, cfg.Join = "lonely", []string{"127.0.0.1:1"}
	cfg.JoinAttempts, cfg.JoinBackoff = 2, time.Millisecond
	if m, err := Join(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		if m != nil {
			m.Shutdown()
		}
		t.Fatalf("Join with no peer = %v", err)
	}
}

func TestMemberlistLogsGoToZap(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l, closeLog := memberlistLogger(zap.New(core))
	l.Printf("[WARN] memberlist: Was able to connect to %s", "x")
	l.Printf("[DEBUG] memberlist: Stream connection from=%s", "y")
	l.Printf("[ERR] memberlist: Failed: %v", errors.New("boom"))
	l.Printf("untagged line")
	var got []string
	for _, e := range logs.All() {
		got = append(got, fmt.Sprintf("%s %s %v", e.Level, e.Message, e.ContextMap()["component"]))
	}
	want := []string{
		"warn Was able to connect to x memberlist",
		"debug Stream connection from=y memberlist",
		"error Failed: boom memberlist",
		"info untagged line memberlist",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	closeLog() // memberlist shut down: its stragglers are not heard
	l.Printf("[WARN] memberlist: late")
	if n := logs.Len(); n != len(want) {
		t.Fatalf("%d lines after close, want %d", n, len(want))
	}
}

func TestEventQueueCoalesces(t *testing.T) {
	checkLeaks(t)
	q := newEventQueue(1)
	defer q.close()
	ev := func(k EventKind, name, relay string) Event {
		return Event{Kind: k, Meta: Meta{Name: name, RelayAddr: relay}}
	}
	// Fill the channel and the forwarder's hand, so that what follows waits.
	q.push(ev(EventJoin, "x1", ""))
	q.push(ev(EventJoin, "x2", ""))
	eventually(t, "the forwarder to hold x2", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.order) == 0
	})
	q.push(ev(EventJoin, "a", ""))
	q.push(ev(EventUpdate, "a", "new")) // still a Join for a reader who never saw a
	q.push(ev(EventJoin, "b", ""))
	q.push(ev(EventLeave, "b", ""))
	q.push(ev(EventUpdate, "c", ""))
	var got []Event
	for range 5 {
		got = append(got, <-q.out)
	}
	want := []Event{ev(EventJoin, "x1", ""), ev(EventJoin, "x2", ""), ev(EventJoin, "a", "new"), ev(EventLeave, "b", ""), ev(EventUpdate, "c", "")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	q.close()
	if _, ok := <-q.out; ok {
		t.Fatal("Events open after close")
	}
	q.push(ev(EventJoin, "late", "")) // after close: ignored, no panic
}

// TestJoinStopsWhenCancelled: a join retrying a peer that does not answer
// returns the context's error once it is cancelled, not after its rounds
// (an agent told to stop while it starts must not wait them out).
func TestJoinStopsWhenCancelled(t *testing.T) {
	checkLeaks(t)
	cfg := DefaultLocalConfig()
	cfg.Name, cfg.Join = "patient", []string{"127.0.0.1:1"}
	cfg.JoinAttempts, cfg.JoinBackoff = 10, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		m, err := Join(ctx, cfg)
		if m != nil {
			m.Shutdown()
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Fatalf("cancelled Join = %v, want context.Canceled naming the peer", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Join still retrying 30 s after its context was cancelled")
	}
}
