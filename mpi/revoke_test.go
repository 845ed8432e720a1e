package mpi_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/telemetry"
)

// Relays switched to bcs while a job runs take its channels back
// (docs/mpi.md, "Taking channels back"): four ranks on two relays
// (node/testdata/mpistream.c: pairs 0-1 and 2-3 across the nodes, an
// Allreduce of all four every round, so same-node pairs carry messages
// too) exchange at full speed on channels, the relays switch, and the
// ranks go on through the relays: every message once and in order
// (mpistream checks), no byte on a channel any more once the switch has
// settled, and every message counted once, sent and delivered.
//
// wildstream.c does the same with wildcard receives: every rank sends each
// other rank a numbered message a round and receives them from
// MPI_ANY_SOURCE, checking each source's order across the switch.
func TestChannelsTakenBackAtBCS(t *testing.T) {
	for _, src := range []string{"node/testdata/mpistream.c", "mpi/testdata/wildstream.c"} {
		t.Run(strings.TrimSuffix(filepath.Base(src), ".c"), func(t *testing.T) { takenBack(t, program(t, src)) })
	}
}

// takenBack is TestChannelsTakenBackAtBCS with program prog.
func takenBack(t *testing.T, prog string) {
	c := newCluster(t, 2, false)
	s := startStream(t, c, prog, []int{0, 1, 0, 1}, 2*time.Minute)
	stats := func() telemetry.RelayJobStats {
		sum, _ := jobTraffic(c.relays, s.id)
		return sum
	}
	s.progress(20)
	before := stats()
	if before.ChannelBytes == 0 {
		t.Fatalf("before the switch: %+v, want messages on channels", before)
	}
	at := lastRound(s.out(0))
	c.switchToBCS(t, 4*time.Millisecond)
	s.progress(at + 10) // settled: every rank has drained its channels
	settled := stats()
	s.progress(at + 30)
	after := stats()
	s.finish()
	end := stats()
	t.Logf("switched at round %d of %d\nbefore %+v\nsettled %+v\nafter %+v\nend %+v", at, lastRound(s.out(0)), before, settled, after, end)
	if after.ChannelBytes != settled.ChannelBytes {
		t.Errorf("%d bytes more on channels between rounds %d and %d, under bcs", after.ChannelBytes-settled.ChannelBytes, at+10, at+30)
	}
	if after.SentBytes-after.ChannelBytes <= settled.SentBytes-settled.ChannelBytes {
		t.Errorf("no message through the relays after the switch: settled %+v, after %+v", settled, after)
	}
	if end.Sent != end.Delivered || end.SentBytes != end.DeliveredBytes {
		t.Errorf("counted %+v: sent and delivered differ", end)
	}
}
