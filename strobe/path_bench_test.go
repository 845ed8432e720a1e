package strobe

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchFollower is an agent's Follower as the node runs it (sealed
// strobes, heartbeats on a socket of their own, an Applied hook), its
// switch a no-op, and sealed strobes for it from "ctl": what the strobe
// path does between the receive and the switch, without the kernel.
func benchFollower(b *testing.B, n int) (*Follower, []Packet) {
	b.Helper()
	key := testKey(b, 1)
	net := NewMockNetwork(1)
	strobeTr, hbTr := net.Transport("a1"), net.Transport("a1-hb")
	b.Cleanup(func() { strobeTr.Close(); hbTr.Close() })
	f := NewFollower(FollowerConfig{Name: "a1", Transport: strobeTr, Heartbeats: hbTr,
		Switch: func(int) time.Duration { return 0 }, Applied: func(SliceRecord) {}, Auth: NewAuth(key, "a1")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(ctx) }() // the heartbeat goroutines
	b.Cleanup(func() { cancel(); <-done })
	ctl := NewAuth(key, "ctl")
	pkts := make([]Packet, n)
	for i := range pkts {
		data, err := ctl.encode(&Strobe{Epoch: 1, Seq: uint64(i + 1), Row: i % 2, MemberEpoch: 1, SentMono: 1})
		if err != nil {
			b.Fatal(err)
		}
		pkts[i] = Packet{From: "ctl", Data: data, RecvMono: 1}
	}
	return f, pkts
}

// BenchmarkStrobePath is the Follower's work for one strobe on the
// real-time thread: open (authenticate, decode), sequence, switch, record,
// queue the heartbeat. Its allocs/op is what the strobe path allocates.
func BenchmarkStrobePath(b *testing.B) {
	f, pkts := benchFollower(b, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f.handle(pkts[i])
	}
}

// The strobe path allocates nothing per strobe in steady state: open
// (authenticate, decode), sequence, switch, record, queue the heartbeat,
// liveness slices included. An allocation there can start a garbage
// collection, whose pauses the switch then waits out. Allocation counts
// are deterministic (unlike times); the average over many strobes is
// truncated, so a rare allocation elsewhere in the process cannot fail it.
func TestStrobePathDoesNotAllocate(t *testing.T) {
	key := testKey(t, 1)
	net := NewMockNetwork(1)
	strobeTr, hbTr := net.Transport("a1"), net.Transport("a1-hb")
	t.Cleanup(func() { strobeTr.Close(); hbTr.Close() })
	// Not Run: this test plays the heartbeat sender (hbq.drain), so only
	// the strobe path's allocations are counted.
	f := NewFollower(FollowerConfig{Name: "a1", Transport: strobeTr, Heartbeats: hbTr,
		Switch: func(int) time.Duration { return 0 }, Applied: func(SliceRecord) {}, Auth: NewAuth(key, "a1")})
	f.SetPeers([]string{"a2-hb", "a3-hb"})
	f.SetLivenessPeers([]string{"c1-hb", "c2-hb"}, 2)
	ctl := NewAuth(key, "ctl")
	const runs = 1000
	pkts := make([]Packet, runs+10)
	for i := range pkts {
		data, err := ctl.encode(&Strobe{Epoch: 1, Seq: uint64(i + 1), Row: i % 2, MemberEpoch: 1, SentMono: 1})
		if err != nil {
			t.Fatal(err)
		}
		pkts[i] = Packet{From: "ctl", Data: data, RecvMono: 1}
	}
	next := 0
	strobe := func() {
		f.handle(pkts[next])
		next++
		f.hbq.drain(func(*outgoingHeartbeat) {}) // the sender, sending nothing
	}
	for range 4 { // warm up: the peer sets installed, the arrays and pools filled
		strobe()
	}
	if n := testing.AllocsPerRun(runs, strobe); n != 0 {
		t.Fatalf("%v allocations per strobe on the strobe path, want 0", n)
	}
	if st := f.Stats(); st.Applied != uint64(next) {
		t.Fatalf("applied %d strobes of %d", st.Applied, next)
	}
}

// RealtimeUDP's receive loop hands a datagram to its handler without
// allocating (a sender already seen), on a real socket.
func TestRealtimeReceiveDoesNotAllocate(t *testing.T) {
	rx, err := ListenUDPRealtime("127.0.0.1:0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- rx.Serve(ctx, func(p Packet) { got <- len(p.Data) })
	}()
	t.Cleanup(func() {
		cancel()
		rx.Close()
		if err := <-done; err != nil && err != context.Canceled {
			t.Error(err)
		}
	})
	ap, err := netip.ParseAddrPort(rx.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	to := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	msg := make([]byte, 100)
	roundTrip := func() {
		if err := unix.Sendto(fd, msg, 0, to); err != nil {
			t.Fatal(err)
		}
		if n := <-got; n != len(msg) {
			t.Fatalf("received %d bytes, sent %d", n, len(msg))
		}
	}
	roundTrip() // the sender's address formatted once
	if n := testing.AllocsPerRun(1000, roundTrip); n != 0 {
		t.Fatalf("%v allocations per datagram received, want 0", n)
	}
}

// BenchmarkRealtimeReceive is one datagram sent on loopback and handed to
// a RealtimeUDP's handler (normal priority): its allocs/op is the receive
// loop's.
func BenchmarkRealtimeReceive(b *testing.B) {
	rx, err := ListenUDPRealtime("127.0.0.1:0", 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rx.Serve(ctx, func(p Packet) { got <- len(p.Data) }) }()
	defer func() { cancel(); rx.Close(); <-done }()
	send := datagramSender(b, rx.LocalAddr())
	b.ReportAllocs()
	for b.Loop() {
		send()
		<-got
	}
}

// BenchmarkStrobePathBesideReaders times each strobe's handling (open,
// sequence, switch, record, queue the heartbeat) alone, then while other
// goroutines read the Follower as an agent's API and metrics do (Stats,
// which copies the slice records, and Records, in a loop) and its peer
// sets change: what a reader holding a lock the strobe path needs costs
// the switch. Reports each handling's p50, p99 and max; the "alone" run is
// the baseline of the same process.
func BenchmarkStrobePathBesideReaders(b *testing.B) {
	for _, readers := range []int{0, 2} {
		name := "alone"
		if readers > 0 {
			name = "beside-readers"
		}
		b.Run(name, func(b *testing.B) {
			f, pkts := benchFollower(b, b.N+4096)
			for i := range 4096 { // the records full, as in an agent that has run a while
				f.handle(pkts[i])
			}
			pkts = pkts[4096:]
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						if r == 0 {
							_ = f.Stats()
							f.SetPeers([]string{"a2-hb", "a3-hb"})
						} else {
							_ = f.Records()
						}
					}
				}()
			}
			lat := make([]int64, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				f.handle(pkts[i])
				lat[i] = int64(time.Since(t0))
				if i%64 == 0 {
					time.Sleep(50 * time.Microsecond) // strobes come a slice apart: the readers run between them
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
			b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
		})
	}
}

// BenchmarkRealtimeWakeups counts the context switches of the whole
// process per strobe when strobes come a 10 ms slice apart to a Served
// RealtimeUDP: "syscall" receives through the runtime's system-call path
// (Serve's default), "raw" with KeepProcessor (as cosched agent's does). Through the
// system-call path the runtime's monitor takes the P of a thread blocked
// for 10 ms, and each return from recvfrom then wakes the monitor into
// polling every 20 µs; the raw receive keeps its P. The sender, a
// goroutine of the same process, costs both the same. Run it with
// -benchtime 300x: each strobe is a real 10 ms.
func BenchmarkRealtimeWakeups(b *testing.B) {
	for _, mode := range []string{"syscall", "raw"} {
		b.Run(mode, func(b *testing.B) {
			rx, err := ListenUDPRealtime("127.0.0.1:0", 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			if mode == "raw" {
				rx.KeepProcessor()
			}
			got := make(chan struct{}, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- rx.Serve(ctx, func(Packet) {
					select {
					case got <- struct{}{}:
					default:
					}
				})
			}()
			defer func() { cancel(); rx.Close(); <-done }()
			send := datagramSender(b, rx.LocalAddr())
			switches := func() int64 {
				var ru unix.Rusage
				if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
					b.Fatal(err)
				}
				return ru.Nvcsw + ru.Nivcsw
			}
			const slice = 10 * time.Millisecond
			for range 20 { // warm: the monitor settles into its rhythm
				send()
				<-got
				time.Sleep(slice)
			}
			before := switches()
			b.ResetTimer()
			next := time.Now()
			for range b.N {
				send()
				<-got
				next = next.Add(slice)
				time.Sleep(time.Until(next))
			}
			b.StopTimer()
			b.ReportMetric(float64(switches()-before)/float64(b.N), "ctxsw/strobe")
		})
	}
}

// datagramSender returns a function that sends one 100-byte datagram to
// addr (an IPv4 ip:port) from a socket of its own, closed when b ends.
func datagramSender(b *testing.B, addr string) func() {
	b.Helper()
	ap := netip.MustParseAddrPort(addr)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	to := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	msg := make([]byte, 100)
	return func() {
		if err := unix.Sendto(fd, msg, 0, to); err != nil {
			b.Fatal(err)
		}
	}
}
