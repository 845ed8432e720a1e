package member

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// heardMember joins a loopback cluster with DefaultLocalConfig, logging to
// core, with heard as its evidence of life (Config.Heard).
func heardMember(t *testing.T, name string, join []string, core zapcore.Core, heard func(string) (time.Duration, bool)) *Membership {
	t.Helper()
	cfg := DefaultLocalConfig()
	cfg.Name, cfg.Join, cfg.Log, cfg.Heard = name, join, zap.New(core).With(zap.String("observer", name)), heard
	m, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return m
}

// heartbeats plays m3's slice heartbeats for Config.Heard: arriving (a
// slice ago) until stopped, then silent since.
type heartbeats struct{ stoppedAt atomic.Int64 }

func (h *heartbeats) stop() { h.stoppedAt.Store(time.Now().UnixNano()) }

func (h *heartbeats) heard(name string) (time.Duration, bool) {
	if name != "m3" {
		return 0, false
	}
	if at := h.stoppedAt.Load(); at != 0 {
		return time.Since(time.Unix(0, at)), true
	}
	return 10 * time.Millisecond, true
}

// A member killed with SIGKILL (another process: no Leave, no Shutdown) is
// declared dead by the others within DetectionBound, the documented upper
// bound of the protocol's timeouts (not a speed claim: the wait is that
// bound, which a loaded machine does not reach). Its heartbeats arrived
// until the kill: the others' hold of a heard member's leave
// (Config.Heard) does not delay a dead one.
func TestKilledMemberDeclaredDeadWithinBound(t *testing.T) {
	checkLeaks(t)
	var hb heartbeats
	core, _ := observer.New(zapcore.InfoLevel)
	m1 := heardMember(t, "m1", nil, core, hb.heard)
	m2 := heardMember(t, "m2", []string{m1.Addr()}, core, hb.heard)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MEMBER_HELPER_JOIN="+m1.Addr(), "MEMBER_HELPER_NAME=m3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		t.Fatalf("helper member: %q, %v", line, err)
	}
	for _, m := range []*Membership{m1, m2} {
		eventually(t, "everyone to see three members", func() bool { return names(m.Members()) == "m1,m2,m3" })
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	hb.stop()
	killed := time.Now()
	bound := DefaultLocalConfig().DetectionBound(3)
	for _, m := range []*Membership{m1, m2} {
		deadline := time.After(bound - time.Since(killed))
	wait:
		for {
			select {
			case ev := <-m.Events():
				if ev.Kind == EventLeave && ev.Meta.Name == "m3" {
					break wait
				}
			case <-deadline:
				t.Fatalf("m3 killed %v ago and still not declared dead (bound %v)", time.Since(killed).Round(time.Millisecond), bound)
			}
		}
	}
	t.Logf("m3 declared dead by both %v after kill -9 (bound %v)", time.Since(killed).Round(time.Millisecond), bound)
}

// A member that cannot answer gossip for longer than its whole suspicion
// (its process stopped with SIGSTOP: a node whose processors its ranks
// keep busy, at the extreme) but whose heartbeats keep arriving is busy,
// not dead: gossip declares it dead, the others hold its leave, and it is
// never gone from their Members nor announced as left; once it runs again
// it refutes and the hold is withdrawn. (A killed member's heartbeats
// stop: TestKilledMemberDeclaredDeadWithinBound.) The heartbeats are the
// test's (Config.Heard): a real agent's come from its real-time strobe
// thread, which runs while its gossip goroutines starve; SIGSTOP would
// stop them too.
func TestBusyMemberHeldWhileHeard(t *testing.T) {
	checkLeaks(t)
	var hb heartbeats
	core, logs := observer.New(zapcore.InfoLevel)
	m1 := heardMember(t, "m1", nil, core, hb.heard)
	m2 := heardMember(t, "m2", []string{m1.Addr()}, core, hb.heard)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MEMBER_HELPER_JOIN="+m1.Addr(), "MEMBER_HELPER_NAME=m3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.HasPrefix(line, "error") {
		t.Fatalf("helper member: %q, %v", line, err)
	}
	for _, m := range []*Membership{m1, m2} {
		eventually(t, "everyone to see three members", func() bool { return names(m.Members()) == "m1,m2,m3" })
	}
	count := func(msg string) int {
		return logs.FilterMessageSnippet(msg).Len()
	}
	// Stopped until gossip has declared it dead at least once (the hold
	// logged): far longer than a probe timeout, as long as memberlist needs.
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	for count("holding its leave") == 0 {
		if time.Since(stopped) > 60*time.Second { // a hang detector, far above DetectionBound(3)
			_ = cmd.Process.Signal(syscall.SIGCONT)
			t.Fatal("m3 stopped for 60 s and gossip never declared it dead")
		}
		for _, m := range []*Membership{m1, m2} {
			if names(m.Members()) != "m1,m2,m3" {
				t.Fatalf("m3 stopped but heard: gone from %s's members: %s", m.name, names(m.Members()))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("gossip declared the stopped m3 dead after %v; held", time.Since(stopped).Round(time.Millisecond))
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "m3 to refute its death", func() bool { return count("its leave is withdrawn") >= count("holding its leave") })
	for _, m := range []*Membership{m1, m2} {
		if names(m.Members()) != "m1,m2,m3" {
			t.Fatalf("after the hold, %s's members: %s", m.name, names(m.Members()))
		}
	drain:
		for {
			select {
			case ev := <-m.Events():
				if ev.Kind == EventLeave {
					t.Fatalf("%s announced %s as left while it was heard", m.name, ev.Meta.Name)
				}
			default:
				break drain
			}
		}
	}
}
