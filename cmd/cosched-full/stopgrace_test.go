package main

import (
	"testing"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/localcluster"
)

// A benchmark's own agents are sent SIGKILL after localcluster's
// TempStopGrace; that must come well within the command's stop grace,
// or the command's safety net exits first and leaves them running (seen
// at load 240 with both at 10 s).
func TestBenchAgentsKilledWithinStopGrace(t *testing.T) {
	if 2*localcluster.TempStopGrace > cli.StopGrace {
		t.Errorf("agents' stop grace %v leaves less than half of the command's %v", localcluster.TempStopGrace, cli.StopGrace)
	}
}
