package member

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// stockLocalConfig is DefaultLocalConfig with memberlist's own local
// timings (the ones cosched used before tuning them for busy hosts).
func stockLocalConfig() Config {
	ml := memberlist.DefaultLocalConfig()
	c := DefaultLocalConfig()
	c.ProbeInterval, c.ProbeTimeout, c.IndirectChecks = ml.ProbeInterval, ml.ProbeTimeout, ml.IndirectChecks
	c.SuspicionMult, c.SuspicionMaxTimeoutMult, c.AwarenessMaxMultiplier = ml.SuspicionMult, ml.SuspicionMaxTimeoutMult, ml.AwarenessMaxMultiplier
	return c
}

// BenchmarkMembershipBusyMember runs 8 members in this process and one in
// a process of its own that is starved the way a node whose processors
// are all busy is: stopped (SIGSTOP) for 2.5 s of every 3 s, for 20 s.
// It reports how often that live member was suspected ("Suspect … has
// failed" in the others' logs) and declared dead (false-deaths: leave
// events), with memberlist's local timings and with DefaultLocalConfig's,
// one after the other. Run with -benchtime 1x.
func BenchmarkMembershipBusyMember(b *testing.B) {
	for _, c := range []struct {
		name  string
		cfg   Config
		stock bool
	}{{"memberlist-local", stockLocalConfig(), true}, {"cosched-local", DefaultLocalConfig(), false}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				suspicions, deaths := busyRun(b, c.cfg, c.stock, 8, 20*time.Second)
				b.ReportMetric(float64(suspicions), "suspicions")
				b.ReportMetric(float64(deaths), "false-deaths")
			}
		})
	}
}

// busyRun runs n members with cfg's timings and a starved one for d, and
// counts the suspicions of the starved one and the leave events.
func busyRun(b *testing.B, base Config, stock bool, n int, d time.Duration) (suspicions, deaths int) {
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
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "MEMBER_HELPER_JOIN="+ms[0].Addr(), "MEMBER_HELPER_NAME=starved")
	if stock {
		cmd.Env = append(cmd.Env, "MEMBER_HELPER_STOCK=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.HasPrefix(line, "error") {
		b.Fatalf("starved member: %q, %v", line, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range ms {
		for len(m.Members()) < n+1 {
			if time.Now().After(deadline) {
				b.Fatalf("%s sees %d members of %d", m.name, len(m.Members()), n+1)
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
	wg.Add(1)
	go func() { // the starvation: 2.5 s stopped, 0.5 s running
		defer wg.Done()
		defer cmd.Process.Signal(syscall.SIGCONT)
		for {
			_ = cmd.Process.Signal(syscall.SIGSTOP)
			select {
			case <-ctx.Done():
				return
			case <-time.After(2500 * time.Millisecond):
			}
			_ = cmd.Process.Signal(syscall.SIGCONT)
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	wg.Wait()
	for _, e := range logs.All()[start:] {
		if strings.Contains(e.Message, "Suspect starved") {
			suspicions++
		}
	}
	return suspicions, deaths
}
