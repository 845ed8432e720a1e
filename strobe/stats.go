package strobe

import (
	"maps"
	"slices"
)

// Stats returns the Follower's counters and distributions.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	st := Stats{
		Epoch: f.shown.epoch, FirstSeq: f.shown.first, LastSeq: f.shown.last, Row: f.shown.row, MemberEpoch: f.shown.memberEpoch,
		Applied: f.shown.applied, Lost: f.shown.lost, Late: f.c.late, Stale: f.c.stale,
		Malformed: f.c.malformed, Unknown: f.c.unknown, Epochs: f.c.epochs,
		StrobesForged: f.c.strobesForged, HeartbeatsForged: f.c.hbForged,
		StrobesReplayed: f.c.strobesReplayed, HeartbeatsReplayed: f.c.hbReplayed,
		EpochApplied: f.shown.epochApplied, EpochLost: f.shown.epochLost,
		Multicast: f.c.multicast, Forwarded: f.c.forwarded, ForwardErrors: f.c.forwardErrors,
		HeartbeatsSent: f.c.hbSent, HeartbeatSendErrors: f.c.hbSendErrors, HeartbeatsDropped: f.c.hbDropped, HeartbeatsReceived: f.c.hbRecv,
		HeartbeatPartsDropped: f.c.hbPartsDropped,
		Peers:                 maps.Clone(f.seen), Targets: slices.Clone(f.peers),
	}
	recs := f.records.snapshot()
	f.mu.Unlock()
	lat := make([]int64, len(recs))
	cost := make([]int64, len(recs))
	for i, r := range recs {
		lat[i] = r.SwitchedMono - r.SentMono
		cost[i] = int64(r.SwitchCost)
	}
	st.Latency, st.SwitchCost = distOf(lat), distOf(cost)
	return st
}

// Current returns the last slice applied and its row: what Stats reports
// of them, without copying anything else (a web page reads it ten times a
// second).
func (f *Follower) Current() (seq uint64, row int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shown.last, f.shown.row
}

// Records returns the last History slices applied, oldest first.
func (f *Follower) Records() []SliceRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records.snapshot()
}
