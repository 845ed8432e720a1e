package relay

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/comm"
)

// The relay against the raw sockets it is built on, 4 KB messages (the
// benchmark jobs' size), measured in one run: ping-pong latency (ns/op is
// one round trip) and streaming throughput (MB/s). The goal: a stream
// through two relays (rank → Unix socket → relay → TCP → relay → Unix
// socket → rank) keeps at least half the raw TCP stream's throughput.

const benchMsg = 4096

// benchRelays starts n linked relays without test logging, their links
// authenticated with key if it is not nil.
func benchRelays(b *testing.B, n int, key *clusterkey.Key) []*Relay {
	b.Helper()
	dir, err := os.MkdirTemp("", "rb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	var rs []*Relay
	for i := range n {
		r, err := New(Config{Node: string(rune('a' + i)), SocketPath: filepath.Join(dir, string(rune('a'+i))+".sock"),
			Listen: "127.0.0.1:0", Log: zap.NewNop(), Key: key})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		rs = append(rs, r)
	}
	link(rs...)
	return rs
}

// benchRanks registers a two-rank job with rank i on relay rs[i] and
// connects both.
func benchRanks(b *testing.B, rs []*Relay, nodes []string, grace time.Duration) [2]*comm.Comm {
	b.Helper()
	for _, r := range rs {
		if err := r.AddJob(1, nodes); err != nil {
			b.Fatal(err)
		}
	}
	var cs [2]*comm.Comm
	for i := range 2 {
		r := rs[0]
		if nodes[i] != rs[0].cfg.Node {
			r = rs[1]
		}
		c, err := comm.Dial(context.Background(), comm.Config{Relay: r.SocketPath(), Job: 1, Rank: i, Size: 2, Grace: grace})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Finalize(context.Background()) })
		cs[i] = c
	}
	return cs
}

func BenchmarkPingPong(b *testing.B) {
	b.Run("raw-unix", func(b *testing.B) {
		x, y := unixPair(b)
		go echo(y, benchMsg)
		buf := make([]byte, benchMsg)
		b.ResetTimer()
		for range b.N {
			if _, err := x.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(x, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range benchCases(b) {
		b.Run(tc.name, func(b *testing.B) {
			cs := benchRanks(b, benchRelays(b, tc.n, tc.key), tc.nodes, tc.grace)
			ctx := context.Background()
			msg := make([]byte, benchMsg)
			done := make(chan error, 1)
			go func() {
				for range b.N {
					m, err := cs[1].Recv(ctx, 0, 0)
					if err == nil {
						err = cs[1].Send(ctx, 0, 0, m.Data)
					}
					if err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				if err := cs[0].Send(ctx, 1, 0, msg); err != nil {
					b.Fatal(err)
				}
				if _, err := cs[0].Recv(ctx, 1, 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			// CPU time per round trip (relays and ranks: this process),
			// which a loaded host inflates less than ns/op.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func BenchmarkStream(b *testing.B) {
	raw := func(b *testing.B, x, y net.Conn) {
		b.SetBytes(benchMsg)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.CopyN(io.Discard, y, int64(b.N)*benchMsg)
		}()
		buf := make([]byte, benchMsg)
		b.ResetTimer()
		for range b.N {
			if _, err := x.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
	}
	b.Run("raw-tcp", func(b *testing.B) {
		x, y := tcpPair(b)
		raw(b, x, y)
	})
	b.Run("raw-unix", func(b *testing.B) {
		x, y := unixPair(b)
		raw(b, x, y)
	})
	for _, tc := range benchCases(b) {
		b.Run(tc.name, func(b *testing.B) {
			cs := benchRanks(b, benchRelays(b, tc.n, tc.key), tc.nodes, tc.grace)
			ctx := context.Background()
			b.SetBytes(benchMsg)
			// The receiver keeps a window of receives posted, as an
			// application streaming with Irecv does.
			const window = 64
			done := make(chan error, 1)
			go func() {
				var reqs []*comm.Request
				post := func() error {
					r, err := cs[1].Irecv(0, 0)
					reqs = append(reqs, r)
					return err
				}
				for range min(window, b.N) {
					if err := post(); err != nil {
						done <- err
						return
					}
				}
				for i := range b.N {
					if _, err := cs[1].Wait(ctx, reqs[0]); err != nil {
						done <- err
						return
					}
					reqs = reqs[1:]
					if i+window < b.N {
						if err := post(); err != nil {
							done <- err
							return
						}
					}
				}
				done <- nil
			}()
			msg := make([]byte, benchMsg)
			b.ResetTimer()
			for range b.N {
				if err := cs[0].Send(ctx, 1, 0, msg); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

type benchCase struct {
	name  string
	nodes []string
	n     int
	key   *clusterkey.Key
	grace time.Duration // the ranks number and keep their messages (comm.Config.Grace)
}

// benchCases are the relay set-ups measured: one node, two nodes, and two
// nodes whose link is authenticated with the cluster key (TLS: the cost of
// authentication beside the same set-up without it).
func benchCases(b *testing.B) []benchCase {
	key, err := clusterkey.New(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	return []benchCase{
		{"relay-one-node", []string{"a", "a"}, 1, nil, 0},
		{"relay-two-nodes", []string{"a", "b"}, 2, nil, 0},
		{"relay-two-nodes-keyed", []string{"a", "b"}, 2, key, 0},
		// What surviving a relay restart costs: numbers, a kept copy
		// and an acknowledgement per message (resume.go).
		{"relay-two-nodes-numbered", []string{"a", "b"}, 2, nil, time.Minute},
	}
}

func unixPair(b *testing.B) (net.Conn, net.Conn) {
	b.Helper()
	dir, err := os.MkdirTemp("", "rb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return pair(b, ln, "unix")
}

func tcpPair(b *testing.B) (net.Conn, net.Conn) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return pair(b, ln, "tcp")
}

func pair(b *testing.B, ln net.Listener, network string) (net.Conn, net.Conn) {
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	x, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	y := <-accepted
	b.Cleanup(func() { x.Close(); y.Close() })
	return x, y
}

// echo writes back every n-byte message it reads.
func echo(c net.Conn, n int) {
	buf := make([]byte, n)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// processCPU is this process's CPU time (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
