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
	if err := m.Stop(job); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "T")
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
