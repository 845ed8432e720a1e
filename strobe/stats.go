package strobe

import (
	"maps"
	"slices"
)

// Stats returns the Follower's counters and distributions.
func (f *Follower) Stats() Stats {
	v := f.view.load()
	st := Stats{
		Epoch: v.epoch, FirstSeq: v.first, LastSeq: v.last, Row: v.row, MemberEpoch: v.memberEpoch,
		Applied: v.applied, Lost: v.lost, Late: v.late, Stale: v.stale, Epochs: v.epochs,
		EpochApplied: v.epochApplied, EpochLost: v.epochLost,
		Multicast: f.multicast.Load(), Forwarded: f.forwarded.Load(), ForwardErrors: f.forwardErrors.Load(),
		HeartbeatsSent: f.hbSent.Load(), HeartbeatSendErrors: f.hbSendErrors.Load(), HeartbeatsDropped: f.hbDropped.Load(),
	}
	if t := f.targets.Load(); t != nil {
		st.Targets = slices.Clone(*t)
	}
	f.mu.Lock()
	st.Malformed, st.Unknown = f.c.malformed, f.c.unknown
	st.StrobesForged, st.HeartbeatsForged = f.c.strobesForged, f.c.hbForged
	st.StrobesReplayed, st.HeartbeatsReplayed = f.c.strobesReplayed, f.c.hbReplayed
	st.HeartbeatsReceived, st.HeartbeatPartsDropped = f.c.hbRecv, f.c.hbPartsDropped
	st.Peers = maps.Clone(f.seen)
	f.mu.Unlock()
	recs := f.records.snapshot()
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
	v := f.view.load()
	return v.last, v.row
}

// Records returns the last History slices applied, oldest first.
func (f *Follower) Records() []SliceRecord {
	return f.records.snapshot()
}
