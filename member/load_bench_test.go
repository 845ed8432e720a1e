package member

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// BenchmarkMembershipOnBusyHost runs 16 members in this process for 15 s
// while eight times as many CPU-bound processes as processors spin, and
// reports how often a live member was suspected (suspicions, memberlist's
// "Suspect … has failed") and declared dead (false-deaths, leave events:
// every member is alive), with memberlist's local timings and with
// DefaultLocalConfig's. Compare within one run: the host's own load moves
// both. Run it with -benchtime 1x.
func BenchmarkMembershipOnBusyHost(b *testing.B) {
	ml := memberlist.DefaultLocalConfig()
	stock := DefaultLocalConfig()
	stock.ProbeInterval, stock.ProbeTimeout, stock.IndirectChecks = ml.ProbeInterval, ml.ProbeTimeout, ml.IndirectChecks
	stock.SuspicionMult, stock.SuspicionMaxTimeoutMult, stock.AwarenessMaxMultiplier = ml.SuspicionMult, ml.SuspicionMaxTimeoutMult, ml.AwarenessMaxMultiplier
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"memberlist-local", stock}, {"cosched-local", DefaultLocalConfig()}} {
		b.Run(c.name, func(b *testing.B) {
			var hogs []*exec.Cmd
			defer func() {
				for _, h := range hogs {
					_ = h.Process.Kill()
					_ = h.Wait()
				}
			}()
			for range 8 * runtime.NumCPU() {
				h := exec.Command("sh", "-c", "while :; do :; done")
				if err := h.Start(); err != nil {
					b.Fatal(err)
				}
				hogs = append(hogs, h)
			}
			for range b.N {
				suspicions, deaths := busyRun(b, c.cfg, 16, 15*time.Second)
				b.ReportMetric(float64(suspicions), "suspicions")
				b.ReportMetric(float64(deaths), "false-deaths")
			}
		})
	}
}

// busyRun runs n members with cfg's timings for d and counts suspicions
// and leave events.
func busyRun(b *testing.B, base Config, n int, d time.Duration) (suspicions, deaths int) {
	core, logs := observer.New(zapcore.InfoLevel)
	var ms []*Membership
	defer func() {
		for _, m := range ms {
			m.Shutdown()
		}
	}()
	for i := range n {
		cfg := base
		cfg.Name = fmt.Sprintf("b%d", i)
		cfg.Log = zap.New(core)
		if i > 0 {
			cfg.Join = []string{ms[0].Addr()}
		}
		m, err := Join(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, m)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range ms {
		for len(m.Members()) < n {
			if time.Now().After(deadline) {
				b.Fatalf("%s sees %d members of %d", m.name, len(m.Members()), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := logs.Len()
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for _, m := range ms {
		for len(m.Events()) > 0 { // the joins
			<-m.Events()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-m.Events():
					if ev.Kind == EventLeave {
						mu.Lock()
						deaths++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range logs.All()[start:] {
		if strings.Contains(e.Message, "Suspect") {
			suspicions++
		}
	}
	return suspicions, deaths
}
