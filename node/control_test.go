package node

import (
	"strings"
	"testing"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// The largest welcome an agent sends (the most exits, each with the
// longest text and a benchmark report, and a few hundred live ranks) fits
// in a control frame: a controller can always read it.
func TestLargestWelcomeFitsAFrame(t *testing.T) {
	w := welcome{Node: strings.Repeat("n", 255)}
	long := truncate(strings.Repeat("x", 10000), maxExitText)
	for i := range maxWelcomeExits {
		w.Exits = append(w.Exits, rankExit{Job: int64(i) << 40, Rank: i << 20, Node: w.Node, PID: 1 << 30, Code: -1, Signal: "SIGKILL",
			CPUTime: 1 << 60, MaxRSS: 1 << 60, Err: long, Failure: "ended without comm.Finalize",
			Stats: &comm.Stats{Iterations: 1 << 30, Compute: 1 << 60, CommWait: 1 << 60, Wall: 1 << 60}})
	}
	for i := range 512 {
		w.Jobs = append(w.Jobs, int64(i)<<40)
		w.Ranks = append(w.Ranks, liveRank{Job: int64(i) << 40, Rank: i << 20, PID: 1 << 30, Stopped: true})
	}
	w.Incarnation, w.LaunchedFloor = 1<<63, 1<<62
	for i := range maxLaunched {
		w.Launched = append(w.Launched, 1<<62+int64(i))
	}
	b, err := frame.Encode(msgWelcome, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxControlFrame {
		t.Fatalf("largest welcome: %d bytes, the control frame limit is %d", len(b), maxControlFrame)
	}
	t.Logf("largest welcome: %d bytes of %d", len(b), maxControlFrame)
}
