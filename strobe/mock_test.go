package strobe

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/mono"
)

// recv reads one packet or fails after a generous timeout.
func recv(t *testing.T, tr Transport) Packet {
	t.Helper()
	select {
	case p, ok := <-tr.Packets():
		if !ok {
			t.Fatal("Packets closed")
		}
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no packet")
	}
	return Packet{}
}

// drainUntilBarrier returns what tr receives before a barrier datagram
// sent now from a fresh transport: with no delay configured, every
// datagram queued for tr earlier arrives before it.
func drainUntilBarrier(t *testing.T, n *MockNetwork, tr Transport) [][]byte {
	t.Helper()
	b := n.Transport("")
	defer b.Close()
	if err := b.Send(tr.LocalAddr(), []byte("barrier")); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for {
		p := recv(t, tr)
		if p.From == b.LocalAddr() {
			return got
		}
		got = append(got, p.Data)
	}
}

func TestMockDelivers(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	a, b := n.Transport("a"), n.Transport("b")
	defer a.Close()
	defer b.Close()
	before := mono.Now()
	if err := a.Send("b", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	p := recv(t, b)
	if p.From != "a" || string(p.Data) != "hi" || p.RecvMono < before || p.RecvMono > mono.Now() {
		t.Fatalf("got %+v", p)
	}
	if err := a.Send("nobody", []byte("x")); err != nil {
		t.Fatalf("send to an unknown address is a silent drop, like UDP: %v", err)
	}
	if st := n.Stats(); st.Sent != 2 || st.NoRoute != 1 {
		t.Fatalf("stats %+v", st)
	}
	if auto := n.Transport(""); auto.LocalAddr() == "" {
		t.Fatal("no generated address")
	} else {
		auto.Close()
	}
}

func TestMockCloseAndReuse(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	a, b := n.Transport("a"), n.Transport("b")
	defer b.Close()
	for range 3 { // queued but unread packets do not stop Close
		_ = b.Send("a", []byte("x"))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for range a.Packets() { // closed after Close; leftovers may drain
	}
	if err := a.Send("b", []byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Send after Close = %v, want net.ErrClosed", err)
	}
	// A restarted process gets its address back.
	a2 := n.Transport("a")
	defer a2.Close()
	_ = b.Send("a", []byte("again"))
	if p := recv(t, a2); string(p.Data) != "again" {
		t.Fatalf("got %q", p.Data)
	}
	defer func() {
		if recover() == nil {
			t.Error("opening an address in use did not panic")
		}
	}()
	n.Transport("a")
}

// lossPattern sends count datagrams a→b under f and returns the indices b
// received, in arrival order.
func lossPattern(t *testing.T, seed uint64, f Faults, count int) []int {
	t.Helper()
	n := NewMockNetwork(seed)
	a, b := n.Transport("a"), n.Transport("b")
	defer a.Close()
	defer b.Close()
	n.SetLinkFaults("a", "b", f)
	// Unrelated traffic on other links must not change a→b's faults.
	c := n.Transport("c")
	defer c.Close()
	n.SetFaults(Faults{Loss: 0.5})
	for i := range count {
		if err := a.Send("b", fmt.Append(nil, i)); err != nil {
			t.Fatal(err)
		}
		if seed%2 == 0 { // interleave other traffic differently per run
			_ = c.Send("a", []byte("noise"))
		}
	}
	n.Flush()
	n.SetFaults(Faults{}) // the barrier must get through
	var got []int
	for _, d := range drainUntilBarrier(t, n, b) {
		var i int
		fmt.Sscan(string(d), &i)
		got = append(got, i)
	}
	return got
}

func TestMockFaultsAreDeterministic(t *testing.T) {
	checkLeaks(t)
	f := Faults{Loss: 0.2, Duplicate: 0.1, Reorder: 0.1}
	one := lossPattern(t, 42, f, 500)
	two := lossPattern(t, 42, f, 500)
	if !reflect.DeepEqual(one, two) {
		t.Fatalf("same seed, different faults:\n%v\n%v", one, two)
	}
	other := lossPattern(t, 43, f, 500)
	if reflect.DeepEqual(one, other) {
		t.Fatal("different seeds gave identical faults")
	}
	// Loss near 20%, some duplicates, some reordering.
	seen := map[int]int{}
	reordered := 0
	for i, v := range one {
		seen[v]++
		if i > 0 && v < one[i-1] {
			reordered++
		}
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	lost := 500 - len(seen)
	t.Logf("lost %d, duplicated %d, reordered %d of 500", lost, dups, reordered)
	if lost < 50 || lost > 150 || dups == 0 || reordered == 0 {
		t.Fatalf("faults not applied as configured: lost %d, dups %d, reordered %d", lost, dups, reordered)
	}
}

func TestMockReorderSwapsWithNext(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(7)
	a, b := n.Transport("a"), n.Transport("b")
	defer a.Close()
	defer b.Close()
	n.SetLinkFaults("a", "b", Faults{Reorder: 1}) // hold every datagram that can be held
	for _, s := range []string{"1", "2", "3", "4", "5"} {
		_ = a.Send("b", []byte(s))
	}
	n.Flush()
	var got string
	for _, d := range drainUntilBarrier(t, n, b) {
		got += string(d)
	}
	// 1 held; 2 delivered, then 1; 3 held; 4, 3; 5 held until Flush.
	if got != "21435" {
		t.Fatalf("delivery order %q, want 21435", got)
	}
}

func TestMockPartitionAndHeal(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	a, b, c := n.Transport("a"), n.Transport("b"), n.Transport("c")
	defer a.Close()
	defer b.Close()
	defer c.Close()
	n.Partition([]string{"a"}, []string{"b", "c"})
	_ = a.Send("b", []byte("x"))
	_ = c.Send("a", []byte("x"))
	_ = b.Send("c", []byte("ok"))
	if p := recv(t, c); string(p.Data) != "ok" {
		t.Fatalf("b→c crosses no partition; got %q", p.Data)
	}
	if got := drainUntilBarrier(t, n, b); len(got) != 0 {
		t.Fatalf("a→b crossed the partition: %q", got)
	}
	if got := drainUntilBarrier(t, n, a); len(got) != 0 {
		t.Fatalf("c→a crossed the partition: %q", got)
	}
	n.Heal()
	_ = a.Send("b", []byte("healed"))
	if p := recv(t, b); string(p.Data) != "healed" {
		t.Fatalf("got %q", p.Data)
	}
	if st := n.Stats(); st.Cut != 2 {
		t.Fatalf("Cut = %d, want 2", st.Cut)
	}
}

func TestMockDelay(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	a, b := n.Transport("a"), n.Transport("b")
	defer a.Close()
	defer b.Close()
	const d = 20 * time.Millisecond
	n.SetLinkFaults("a", "b", Faults{Delay: d})
	sent := mono.Now()
	for i := range 3 {
		_ = a.Send("b", []byte{byte(i)})
	}
	for i := range 3 {
		p := recv(t, b)
		if p.Data[0] != byte(i) {
			t.Fatalf("delay reordered a link: got %d at %d", p.Data[0], i)
		}
		if waited := time.Duration(p.RecvMono - sent); waited < d {
			t.Fatalf("delivered after %v, before the %v delay", waited, d)
		}
	}
}
