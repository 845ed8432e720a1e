package rank

import (
	"testing"
	"time"
)

// Release continues a rank's start-up shim once and never again: a rank
// stopped after it (as a freezer-suspended rank never is, but a signal
// would show it) stays stopped through another Release.
func TestReleaseContinuesOnlyTheShim(t *testing.T) {
	m, dir := newManager(t)
	// An unusual job id: tests of other runs on the machine that signal
	// "job 1"'s processes by COSCHED_JOB must not continue this one.
	const job = 915001
	pid := mustStart(t, m, spec(dir, job, 0, true, "sh", "-c", "while :; do :; done"))
	if s := state(pid); s != 'T' {
		t.Fatalf("state after Start = %q, want 'T'", s)
	}
	if err := m.Release(job); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "RS")
	// Stopped (the precondition of what follows). On the loaded test
	// machine a stop was twice seen not to take within 20 s, cause not
	// found (a stray SIGCONT from elsewhere is the suspect): stop again
	// until it does, and say so.
	deadline := time.Now().Add(waitLong)
	for tries := 1; ; tries++ {
		if err := m.Stop(job); err != nil {
			t.Fatal(err)
		}
		if stoppedWithin(pid, 2*time.Second) {
			if tries > 1 {
				t.Logf("pid %d stopped after %d stops", pid, tries)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: state %q after %d stops in %v, want 'T'", pid, state(pid), tries, waitLong)
		}
	}
	if err := m.Release(job); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if s := state(pid); s != 'T' {
		t.Fatalf("state after a second Release = %q, want still 'T' (released once only)", s)
	}
	if err := m.Kill(job); err != nil {
		t.Fatal(err)
	}
	if e := nextExit(t, m); e.Signal != "killed" {
		t.Fatalf("Exit %+v, want killed", e)
	}
}

// stoppedWithin reports whether pid is seen stopped ('T') within d.
func stoppedWithin(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(poll) {
		if state(pid) == 'T' {
			return true
		}
	}
	return false
}
