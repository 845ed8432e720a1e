package ui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

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

// TimelineEvent is the page's "timeline" event, and GET /ui/timeline's
// answer: slice records, either all the hub keeps (Full) or those it got
// since event N-1 (a delta: the page adds them to what it has; a page that
// missed a number asks GET /ui/timeline for the full form).
type TimelineEvent struct {
	N    uint64 `json:"n"`
	Full bool   `json:"full"`
	// Max is how many slices the page keeps: the newest (by first switch).
	Max   int      `json:"max"`
	Nodes []string `json:"nodes"`
	// Recs are the records, each [slice, row, node, switch, seq]: the
	// slice as the hub numbers them (a slice's records share it; seq, the
	// controller's number, starts again at a failover), node an index in
	// Nodes, the switch in µs on the controller's monotonic clock. Sorted
	// by slice then node, slice, switch and seq are each given as the
	// difference from the record before (the first's from 0): small
	// numbers, a few bytes a record.
	Recs [][5]int64 `json:"recs"`
}

// tlRecord is one node's switch to a slice, as the timeline keeps it.
type tlRecord struct {
	id   uint64
	seq  uint64
	row  int
	node string
	at   int64 // mono ns
}

// timeline keeps the last TimelineSlices slices of every node's records,
// merged reading after reading. Not safe for concurrent use (the hub's
// state loop owns it).
type timeline struct {
	max    int
	slices map[sliceKey]*tlSlice
	nextID uint64 // the id of the next new slice: ids grow with first sight
}

type sliceKey struct{ epoch, seq uint64 }

type tlSlice struct {
	key sliceKey
	id  uint64
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

// add merges records by node, then forgets all but the newest slices. It
// returns the records new to it (a node's switch to a slice it did not
// have) among those it keeps.
func (t *timeline) add(records map[string][]telemetry.SliceRecord) []tlRecord {
	var added []tlRecord
	for node, recs := range records {
		for _, r := range recs {
			if r.SwitchedMono == 0 {
				continue
			}
			k := sliceKey{r.Epoch, r.Seq}
			s := t.slices[k]
			if s == nil {
				t.nextID++
				s = &tlSlice{key: k, id: t.nextID, row: r.Row, at: map[string]int64{}}
				t.slices[k] = s
			}
			at := switchedAt(r)
			if _, had := s.at[node]; !had {
				added = append(added, tlRecord{id: s.id, seq: k.seq, row: s.row, node: node})
			}
			s.at[node] = at
			if len(s.at) == 1 || at < s.min {
				s.min = at
			}
		}
	}
	if len(t.slices) > t.max {
		all := t.sorted()
		for _, s := range all[:len(all)-t.max] {
			delete(t.slices, s.key)
		}
	}
	// Only those kept, each at its last time (a record read twice, from
	// a controller that could not say since when, counts once).
	ids := make(map[uint64]*tlSlice, len(t.slices))
	for _, s := range t.slices {
		ids[s.id] = s
	}
	kept := added[:0]
	for _, r := range added {
		if s := ids[r.id]; s != nil {
			r.at = s.at[r.node]
			kept = append(kept, r)
		}
	}
	return kept
}

// records lists every record the timeline keeps.
func (t *timeline) records() []tlRecord {
	var out []tlRecord
	for _, s := range t.slices {
		for node, at := range s.at {
			out = append(out, tlRecord{id: s.id, seq: s.key.seq, row: s.row, node: node, at: at})
		}
	}
	return out
}

// encode renders records as event n, TimelineEvent as JSON (sorting
// them). By hand: encoding/json takes longer for these arrays of
// numbers, and the hub encodes the full form at every reading.
func (t *timeline) encode(n uint64, full bool, recs []tlRecord) []byte {
	slices.SortFunc(recs, func(a, b tlRecord) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.node, b.node)) })
	index := map[string]int{}
	var nodes []string
	for _, r := range recs {
		if _, ok := index[r.node]; !ok {
			index[r.node] = 0
			nodes = append(nodes, r.node)
		}
	}
	slices.Sort(nodes)
	b := make([]byte, 0, 64+len(recs)*20)
	b = fmt.Appendf(b, `{"n":%d,"full":%t,"max":%d,"nodes":[`, n, full, t.max)
	for i, name := range nodes {
		index[name] = i
		if i > 0 {
			b = append(b, ',')
		}
		q, _ := json.Marshal(name) // a string: never fails
		b = append(b, q...)
	}
	b = append(b, `],"recs":[`...)
	var id, at, seq int64
	for i, r := range recs {
		us := r.at / 1e3
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(r.id)-id, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.row), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(index[r.node]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, us-at, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.seq)-seq, 10)
		b = append(b, ']')
		id, at, seq = int64(r.id), us, int64(r.seq)
	}
	return append(b, "]}"...)
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
