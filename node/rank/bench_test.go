package rank

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Timings, never assertions. Run with
//
//	go test -run '^$' -bench . ./node/rank/

// BenchmarkStart measures Start: fork+exec of the program (running), or
// fork+exec of the shim until it has stopped itself (stopped). The shim is
// this test binary unless COSCHED_RANK_BENCH_SHIM names another command,
// e.g. COSCHED_RANK_BENCH_SHIM="$PWD/bin/cosched __rank-exec".
func BenchmarkStart(b *testing.B) {
	var mods []func(*Config)
	if shim := strings.Fields(os.Getenv("COSCHED_RANK_BENCH_SHIM")); len(shim) > 0 {
		mods = append(mods, func(c *Config) { c.Shim = shim })
	}
	for _, stopped := range []bool{false, true} {
		b.Run(fmt.Sprintf("stopped=%v", stopped), func(b *testing.B) {
			m, dir := newManager(b, mods...)
			for i := range b.N {
				pid := mustStart(b, m, spec(dir, int64(i), 0, stopped, "sleep", "1000"))
				b.StopTimer()
				if err := m.Kill(int64(i)); err != nil {
					b.Fatal(err)
				}
				if e := nextExit(b, m); e.PID != pid {
					b.Fatalf("Exit %+v", e)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkStopCont measures the cost to the agent of one Stop and one Cont
// of a job (the kill(2) calls), per rank.
func BenchmarkStopCont(b *testing.B) {
	const ranks = 8
	m, dir := newManager(b)
	for r := range ranks {
		mustStart(b, m, spec(dir, 1, r, false, "sleep", "1000"))
	}
	b.ResetTimer()
	for range b.N {
		if err := m.Stop(1); err != nil {
			b.Fatal(err)
		}
		if err := m.Cont(1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ranks), "ns/rank")
}

// BenchmarkStopContLatency measures, for busy ranks, the time from Stop
// until the kernel reports every rank stopped, and from Cont until every
// rank is reported continued (waitid on each pid; the reaper only waits for
// exits, so consuming these reports is harmless).
func BenchmarkStopContLatency(b *testing.B) {
	for _, ranks := range []int{1, 4} {
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			m, dir := newManager(b)
			var pids []int
			for r := range ranks {
				pids = append(pids, mustStart(b, m, spec(dir, 1, r, false, "sh", "-c", "while :; do :; done")))
			}
			var stop, cont time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := m.Stop(1); err != nil {
					b.Fatal(err)
				}
				waitAll(b, pids, unix.WSTOPPED)
				t1 := time.Now()
				if err := m.Cont(1); err != nil {
					b.Fatal(err)
				}
				waitAll(b, pids, unix.WCONTINUED)
				t2 := time.Now()
				stop += t1.Sub(t0)
				cont += t2.Sub(t1)
			}
			b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N), "ns-to-stopped")
			b.ReportMetric(float64(cont.Nanoseconds())/float64(b.N), "ns-to-continued")
		})
	}
}

func waitAll(b *testing.B, pids []int, options int) {
	for _, pid := range pids {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, options, nil)
			if err == nil {
				break
			}
			if err != unix.EINTR {
				b.Fatal(err)
			}
		}
	}
}
