package mpi_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/mpi/mpibuild"
)

// BenchmarkRankStart: a rank's start and end on cosched's library
// (connecting to a relay in this process) and, as the baseline, on
// MPICH's own (a singleton: no mpiexec, no relay): the process from fork
// to exit (ns/op), MPI_Init plus MPI_Finalize as the program times them
// (init-ns), and its peak resident memory after exec (VmHWM, KiB).
// Report ratios. go-c-shared is the floor of a library in Go
// (testdata/goshared: MPI_Init and MPI_Finalize that do nothing, built
// -buildmode=c-shared): the Go runtime's own start and memory.
func BenchmarkRankStart(b *testing.B) {
	prog := program(b, "mpi/testdata/initfin.c")
	report := func(b *testing.B, outs []string) {
		var ns, kib float64
		for _, o := range outs {
			var a, c float64
			if _, err := fmt.Sscan(o, &a, &c); err != nil {
				b.Fatalf("initfin said %q: %v", o, err)
			}
			ns, kib = ns+a, kib+c
		}
		b.ReportMetric(ns/float64(len(outs)), "init-ns")
		b.ReportMetric(kib/float64(len(outs)), "VmHWM-KiB")
	}
	b.Run("mpich", func(b *testing.B) {
		var outs []string
		for range b.N {
			cmd := exec.CommandContext(context.Background(), prog)
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			outs = append(outs, string(out))
		}
		report(b, outs)
	})
	b.Run("go-c-shared", func(b *testing.B) {
		root, err := mpibuild.Root()
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		build := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, "libmpich.so.12"), "./mpi/testdata/goshared")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build -buildmode=c-shared: %v\n%s", err, out)
		}
		var outs []string
		b.ResetTimer()
		for range b.N {
			cmd := exec.CommandContext(context.Background(), prog)
			cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir)
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			outs = append(outs, string(out))
		}
		report(b, outs)
	})
	b.Run("cosched", func(b *testing.B) {
		c := newCluster(b, 1, false)
		var outs []string
		b.ResetTimer()
		for range b.N {
			r := c.run(b, prog, []int{0}, time.Minute)[0]
			if r.exit != 0 {
				b.Fatalf("exit %d: %s", r.exit, r.err)
			}
			outs = append(outs, r.out)
		}
		report(b, outs)
	})
}

// BenchmarkPingPong runs node/testdata/pingpong.c between two ranks on
// two relays in this process (immediate delivery: over the ranks' own TCP
// connection, and with channels off rank → Unix socket → relay → TCP →
// relay → Unix socket → rank), without agents: the case issue 21's
// latency and bandwidth targets are about, cheap enough to alternate
// builds (docs/mpi.md, "Two relays"). Each iteration is one run
// of the program: cosched-µs is the one-way latency of 8-byte messages,
// cosched-MB/s the 1 MiB ping-pong bandwidth, the mean over the runs.
// mpich is the same binary on MPICH's own transport, started by
// mpiexec.mpich on this host (shared memory; mpich-tcp: its TCP
// netmod, as between two nodes), as the floor.
// relay-cpu-ms is the CPU time of this process (the two relays) per run,
// which a loaded host inflates less than the wall-clock figures.
//
//	go test -run '^$' -bench PingPong -benchtime 3x ./mpi
func BenchmarkPingPong(b *testing.B) {
	prog := program(b, "node/testdata/pingpong.c")
	args := []string{"5000", "100"}
	// pingpong.c's round trips, warm-ups included (iters/10+1 each).
	roundTrips := 5000 + 5000/10 + 1 + 100 + 100/10 + 1
	report := func(b *testing.B, what string, outs []string) {
		var lat, bw float64
		for _, o := range outs {
			var l, w float64
			if _, err := fmt.Sscanf(strings.TrimSpace(o), "latency_us %g bandwidth_MBps %g", &l, &w); err != nil {
				b.Fatalf("pingpong said %q: %v", o, err)
			}
			lat, bw = lat+l, bw+w
		}
		n := float64(len(outs))
		b.ReportMetric(lat/n, what+"-µs")
		b.ReportMetric(bw/n, what+"-MB/s")
	}
	// cosched: the ranks on two nodes, over the TCP connection their
	// relays made them (comm/relay/xchannels.go); cosched-relay: the same
	// without channels (COSCHED_MPI_CHANNELS=0), every message through
	// both relays (TCP between them); cosched-1node: both on one node,
	// over the socket pair the relay grants them (comm/relay/channels.go);
	// cosched-1node-relay: the same without channels.
	for _, place := range []struct {
		name  string
		nodes int
		ranks []int
		env   []string
	}{
		{"cosched-relay", 2, []int{0, 1}, []string{"COSCHED_MPI_CHANNELS=0"}},
		{"cosched", 2, []int{0, 1}, nil},
		{"cosched-1node-relay", 1, []int{0, 0}, []string{"COSCHED_MPI_CHANNELS=0"}},
		{"cosched-1node", 1, []int{0, 0}, nil},
	} {
		b.Run(place.name, func(b *testing.B) {
			c := newCluster(b, place.nodes, false)
			c.env = append(c.env, place.env...)
			var outs []string
			b.ResetTimer()
			cpu0 := selfCPU()
			sw0, rsw0 := switches(syscall.RUSAGE_SELF), switches(syscall.RUSAGE_CHILDREN)
			for range b.N {
				res := c.run(b, prog, place.ranks, 5*time.Minute, args...)
				for _, r := range res {
					if r.exit != 0 {
						b.Fatalf("rank %d: exit %d: %s", r.rank, r.exit, r.err)
					}
				}
				outs = append(outs, res[0].out)
			}
			b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N)/1e6, "relay-cpu-ms")
			// Context switches per message (one way), at the relays and at
			// the two ranks: what a loaded host inflates least.
			msgs := float64(2 * b.N * roundTrips)
			b.ReportMetric(float64(switches(syscall.RUSAGE_SELF)-sw0)/msgs, "relay-csw/msg")
			b.ReportMetric(float64(switches(syscall.RUSAGE_CHILDREN)-rsw0)/msgs, "ranks-csw/msg")
			report(b, "cosched", outs)
		})
	}
	// mpich-tcp: MPICH's transport as between two nodes (UCX over
	// loopback TCP, its shared memory off).
	for _, m := range []struct {
		name string
		env  []string
	}{{"mpich", nil}, {"mpich-tcp", []string{"UCX_TLS=tcp,self", "MPIR_CVAR_NOLOCAL=1"}}} {
		b.Run(m.name, func(b *testing.B) {
			mpiexec, err := exec.LookPath("mpiexec.mpich")
			if err != nil {
				b.Skip("no mpiexec.mpich (apt-get install mpich)")
			}
			var outs []string
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				cmd := exec.CommandContext(ctx, mpiexec, append([]string{"-n", "2", prog}, args...)...)
				cmd.Env = append(os.Environ(), m.env...)
				cmd.WaitDelay = 5 * time.Second
				out, err := cmd.Output()
				cancel()
				if err != nil {
					b.Fatalf("mpiexec: %v\n%s", err, out)
				}
				outs = append(outs, string(out))
			}
			report(b, "mpich", outs)
		})
	}
}

// BenchmarkPingPongNumbered is BenchmarkPingPong's two-node ping-pong
// with and without a relay grace (COSCHED_RELAY_GRACE, which an agent
// with --keep-ranks gives its ranks): protocol 3's numbered messages,
// each kept until the destination's relay acknowledges it, against the
// plain protocol, alternated in each iteration on the same relays. The
// ratios are numbered over plain (latency: > 1 is slower; bandwidth:
// < 1 is slower).
//
//	go test -run '^$' -bench PingPongNumbered -benchtime 5x ./mpi
func BenchmarkPingPongNumbered(b *testing.B) {
	prog := program(b, "node/testdata/pingpong.c")
	c := newCluster(b, 2, false)
	var lat, bw [2]float64 // [plain, numbered]
	for i := range b.N {
		for k := range 2 {
			k := (k + i) % 2 // alternate which goes first
			c.env = nil
			if k == 1 {
				c.env = []string{"COSCHED_RELAY_GRACE=1m"}
			}
			res := c.run(b, prog, []int{0, 1}, 5*time.Minute, "5000", "100")
			for _, r := range res {
				if r.exit != 0 {
					b.Fatalf("rank %d: exit %d: %s", r.rank, r.exit, r.err)
				}
			}
			var l, w float64
			if _, err := fmt.Sscanf(strings.TrimSpace(res[0].out), "latency_us %g bandwidth_MBps %g", &l, &w); err != nil {
				b.Fatalf("pingpong said %q: %v", res[0].out, err)
			}
			lat[k] += l
			bw[k] += w
		}
	}
	n := float64(b.N)
	b.ReportMetric(lat[0]/n, "plain-µs")
	b.ReportMetric(lat[1]/n, "numbered-µs")
	b.ReportMetric(lat[1]/lat[0], "latency-ratio")
	b.ReportMetric(bw[0]/n, "plain-MB/s")
	b.ReportMetric(bw[1]/n, "numbered-MB/s")
	b.ReportMetric(bw[1]/bw[0], "bandwidth-ratio")
}

// switches is the context switches, voluntary and not, of who
// (syscall.RUSAGE_SELF: this process; RUSAGE_CHILDREN: its children
// waited for).
func switches(who int) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw + ru.Nivcsw
}

// selfCPU is this process's CPU time (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
