package leakcheck

import (
	"strings"
	"testing"
	"time"
)

// parked blocks until release is closed: a goroutine of this package.
func parked(release <-chan struct{}, done chan<- struct{}) {
	<-release
	close(done)
}

// spawn starts parked from package code: a goroutine a test function
// starts itself is that test's own (see running).
func spawn(release <-chan struct{}, done chan<- struct{}) { go parked(release, done) }

// A goroutine of a watched package is seen while it runs and no longer
// once it exits; one of an unwatched package never is.
func TestSeesWatchedGoroutinesOnly(t *testing.T) {
	release, done := make(chan struct{}), make(chan struct{})
	spawn(release, done)
	watched := New("leakcheck", "github.com/cosched/cosched/internal/leakcheck")
	other := New("nothing", "example.com/nothing")
	if leaked := watched.settle(50 * time.Millisecond); !strings.Contains(leaked, "leakcheck.parked") {
		t.Errorf("the parked goroutine was not reported:\n%s", leaked)
	}
	if leaked := other.settle(0); leaked != "" {
		t.Errorf("an unwatched package's check reported:\n%s", leaked)
	}
	close(release)
	<-done
	if leaked := watched.settle(5 * time.Second); leaked != "" {
		t.Errorf("reported after the goroutine ended:\n%s", leaked)
	}
}
