package ui

import (
	"cmp"
	"maps"
	"slices"

	"github.com/cosched/cosched/telemetry"
)

// TimelineSlices bounds the timeline: the last slices it keeps and shows
// (two minutes at 100 ms slices, twelve seconds at 10 ms). A Source asks
// each agent for that many records at every statistics reading.
const TimelineSlices = 1200

// Timeline is which row each node ran when over the last slices, and how
// far apart the nodes switched: the page's Gantt chart. Times are
// microseconds before End, the newest switch (0 is the right edge).
type Timeline struct {
	Lanes []Lane `json:"lanes"`
	// Skew is, per slice seen by two nodes or more, when the first and the
	// last of them switched to it: [from, to].
	Skew [][2]int64 `json:"skew"`
	Span int64      `json:"span_us"` // from the oldest switch kept to End
}

// Lane is one node's switches, oldest first: at T[i] it started running
// Rows[i] (slice Seqs[i]) and ran it until T[i+1].
type Lane struct {
	Node string   `json:"node"`
	T    []int64  `json:"t"`
	Rows []int    `json:"rows"`
	Seqs []uint64 `json:"seqs"`
}

// timeline keeps the last TimelineSlices slices of every node's records,
// merged reading after reading. Not safe for concurrent use (the hub's
// state loop owns it).
type timeline struct {
	max    int
	slices map[sliceKey]*tlSlice
}

type sliceKey struct{ epoch, seq uint64 }

type tlSlice struct {
	key sliceKey
	row int
	at  map[string]int64 // node → its switch (mono ns)
	min int64
}

func newTimeline(max int) *timeline {
	return &timeline{max: max, slices: map[sliceKey]*tlSlice{}}
}

// switchedAt places a node's switch on the timeline. On one host (or
// hosts with aligned monotonic clocks) that is its SwitchedMono. A record
// whose switch cannot be on the controller's clock (before the strobe was
// sent, or a second after it) comes from a host with its own clock: its
// switch is placed at the strobe's send time plus its own reception to
// switch time (the network's delay is not seen).
func switchedAt(r telemetry.SliceRecord) int64 {
	if d := r.SwitchedMono - r.SentMono; r.SentMono != 0 && (d < 0 || d > 1e9) {
		return r.SentMono + max(0, r.SwitchedMono-r.RecvMono)
	}
	return r.SwitchedMono
}

// add merges records by node, then forgets all but the newest slices.
func (t *timeline) add(records map[string][]telemetry.SliceRecord) {
	for node, recs := range records {
		for _, r := range recs {
			if r.SwitchedMono == 0 {
				continue
			}
			k := sliceKey{r.Epoch, r.Seq}
			s := t.slices[k]
			if s == nil {
				s = &tlSlice{key: k, row: r.Row, at: map[string]int64{}}
				t.slices[k] = s
			}
			at := switchedAt(r)
			s.at[node] = at
			if len(s.at) == 1 || at < s.min {
				s.min = at
			}
		}
	}
	if len(t.slices) <= t.max {
		return
	}
	all := t.sorted()
	for _, s := range all[:len(all)-t.max] {
		delete(t.slices, s.key)
	}
}

// sorted lists the slices in time order.
func (t *timeline) sorted() []*tlSlice {
	all := make([]*tlSlice, 0, len(t.slices))
	for _, s := range t.slices {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b *tlSlice) int {
		return cmp.Or(cmp.Compare(a.min, b.min), cmp.Compare(a.key.epoch, b.key.epoch), cmp.Compare(a.key.seq, b.key.seq))
	})
	return all
}

// view renders the timeline for the page (nil when it is empty).
func (t *timeline) view() *Timeline {
	all := t.sorted()
	if len(all) == 0 {
		return nil
	}
	var end int64
	for _, s := range all {
		for _, at := range s.at {
			end = max(end, at)
		}
	}
	v := &Timeline{Span: (end - all[0].min) / 1e3, Skew: [][2]int64{}}
	lanes := map[string]*Lane{}
	for _, s := range all {
		var last int64
		for node, at := range s.at {
			l := lanes[node]
			if l == nil {
				l = &Lane{Node: node}
				lanes[node] = l
			}
			l.T = append(l.T, (at-end)/1e3)
			l.Rows = append(l.Rows, s.row)
			l.Seqs = append(l.Seqs, s.key.seq)
			last = max(last, at)
		}
		if len(s.at) >= 2 {
			v.Skew = append(v.Skew, [2]int64{(s.min - end) / 1e3, (last - end) / 1e3})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(lanes)) {
		l := lanes[name]
		// Slices are in the order of their first switch; a node's own
		// switches follow that order but for ties of skew: keep its
		// lane sorted by its own times.
		idx := make([]int, len(l.T))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(l.T[a], l.T[b]) })
		sorted := Lane{Node: name, T: make([]int64, len(idx)), Rows: make([]int, len(idx)), Seqs: make([]uint64, len(idx))}
		for i, j := range idx {
			sorted.T[i], sorted.Rows[i], sorted.Seqs[i] = l.T[j], l.Rows[j], l.Seqs[j]
		}
		v.Lanes = append(v.Lanes, sorted)
	}
	return v
}
