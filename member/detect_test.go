package member

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A member killed with SIGKILL (another process: no Leave, no Shutdown) is
// declared dead by the others within DetectionBound, the documented upper
// bound of the protocol's timeouts (not a speed claim: the wait is that
// bound, which a loaded machine does not reach).
func TestKilledMemberDeclaredDeadWithinBound(t *testing.T) {
	checkLeaks(t)
	m1 := mustMember(t, "m1", nil, nil)
	m2 := mustMember(t, "m2", []string{m1.Addr()}, nil)
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
