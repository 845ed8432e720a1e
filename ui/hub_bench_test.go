package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/telemetry"
)

// BenchmarkHubFanout is the cost of one slice event for every open page:
// the hub encodes it once and offers the same bytes to each page, whose
// stream takes and writes it (to io.Discard here). pages=0 is the
// baseline (the event encoded, nobody to send it to); the per-page cost is
// (pages=N − pages=0)/N.
func BenchmarkHubFanout(b *testing.B) {
	for _, pages := range []int{0, 1, 50} {
		b.Run(fmt.Sprintf("pages=%d", pages), func(b *testing.B) {
			h := NewHub(&fakeSource{}, HubConfig{})
			subs := make([]*Sub, pages)
			for i := range subs {
				s, leave := h.Subscribe()
				defer leave()
				subs[i] = s
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				h.publish(kindSlice, event("slice", fmt.Appendf(nil, `{"seq":%d,"row":%d}`, i, i%2)))
				for _, s := range subs {
					<-s.Wake()
					for _, ev := range s.Take() {
						_, _ = io.Discard.Write(ev)
					}
				}
			}
		})
	}
}

// BenchmarkStateReading is the hub's cost of one statistics reading of a
// 4-node cluster at 20 ms slices (250 new slices per node in 5 s, the
// timeline full at TimelineSlices): timeline=false is the baseline (the
// state encoded), timeline=true adds the records' merge and the timeline
// events' encoding, the full form (kept for new pages) and the delta (sent
// to every page). It reports the events' sizes, and the size of the
// timeline as every page was sent it before deltas (the lanes of
// Timeline, the whole of it each reading).
func BenchmarkStateReading(b *testing.B) {
	const nodes, perReading = 4, 250
	names := []string{"a0", "a1", "a2", "a3"}
	jobs := []api.Job{{ID: 1, State: api.Running, Columns: []int{0, 1, 2, 3}}, {ID: 2, State: api.Running, Row: 1, Columns: []int{0, 1, 2, 3}}}
	for _, withTimeline := range []bool{false, true} {
		b.Run(fmt.Sprintf("timeline=%v", withTimeline), func(b *testing.B) {
			tl := newTimeline(TimelineSlices)
			var seq uint64
			records := func() map[string][]telemetry.SliceRecord {
				m := map[string][]telemetry.SliceRecord{}
				for i := range perReading {
					s := seq + uint64(i) + 1
					for n, name := range names[:nodes] {
						t := int64(s) * 20e6
						m[name] = append(m[name], telemetry.SliceRecord{Epoch: 1, Seq: s, Row: int(s % 2), SentMono: t, RecvMono: t + 1e5, SwitchedMono: t + 1e5 + int64(n)*1e4})
					}
				}
				seq += perReading
				return m
			}
			for range TimelineSlices / perReading {
				tl.add(records())
			}
			var size, full, delta int
			var n uint64
			for b.Loop() {
				buf, err := json.Marshal(State{Jobs: jobs})
				if err != nil {
					b.Fatal(err)
				}
				size = len(buf)
				if withTimeline {
					added := tl.add(records())
					n++
					full = len(tl.encode(n, true, tl.records()))
					delta = len(tl.encode(n, false, added))
				}
			}
			b.ReportMetric(float64(size), "bytes/state")
			if withTimeline {
				old, err := json.Marshal(tl.view())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(old)), "bytes/whole-timeline-before")
				b.ReportMetric(float64(full), "bytes/full-form")
				b.ReportMetric(float64(delta), "bytes/delta")
			}
		})
	}
}
