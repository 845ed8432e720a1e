package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/telemetry"
)

// State is the cluster as every page sees it: the queue without any job's
// details (PublicJob), the nodes and, every few seconds, their health.
type State struct {
	Jobs  []api.Job       `json:"jobs"`
	Nodes api.NodesReport `json:"nodes"`
	// Lent are the matrix cells that lent their processor to another
	// row's rank under BCS (slot reuse), from the nodes' statistics:
	// refreshed with them (every StatsEvery).
	Lent []LentCell `json:"lent,omitempty"`
	// Error says why the last refresh failed (the page keeps the state
	// before it, marked stale).
	Error string `json:"error,omitempty"`
}

// LentCell is a matrix cell (row, column of node) whose processor was lent
// to another row's rank in that row's slices: Count times since the
// node's agent started, Recent of them since the reading before
// (StatsEvery earlier).
type LentCell struct {
	Node   string `json:"node"`
	Column int    `json:"column"`
	Row    int    `json:"row"`
	Count  uint64 `json:"count"`
	Recent uint64 `json:"recent"`
}

// Source is what the hub reads. Slice is called at the hub's slice rate,
// from one goroutine, and must be cheap (an agent's last strobe, under a
// lock); State is called at most every StateEvery and may take a round trip
// to the controller: stats asks for the nodes' strobe statistics too
// (GET /v1/nodes?stats=1, which asks every agent), with each agent's slice
// records after those since names (all it keeps, up to TimelineSlices,
// for an agent since does not name) and the cursor to ask with next
// (NodesReport.Cursor).
type Source interface {
	Slice() (seq uint64, row int)
	State(ctx context.Context, stats bool, since api.Cursor) (State, error)
}

// HubConfig bounds the hub's rates: however short the slices and however
// many pages are open, the hub reads the slice clock once per SliceEvery,
// the cluster's state once per StateEvery and its statistics once per
// StatsEvery, and writes one event of each kind per reading, the same
// bytes to every page.
type HubConfig struct {
	SliceEvery, StateEvery, StatsEvery time.Duration
}

// DefaultHubConfig: ten slice events a second at most, the queue every
// second, the nodes' health every five.
func DefaultHubConfig() HubConfig {
	return HubConfig{SliceEvery: 100 * time.Millisecond, StateEvery: time.Second, StatsEvery: 5 * time.Second}
}

// Hub fans the slice clock and the cluster's state out to the open pages
// as server-sent events. It reads its Source only while a page is
// subscribed. A slow page never holds it up: each subscriber keeps only the
// latest event of each kind not yet written.
type Hub struct {
	src  Source
	cfg  HubConfig
	kick chan struct{} // capacity 1: a page opened with no state to show, or none was open
	done chan struct{} // closed when Run has returned

	// stats is the last report with statistics, lent the cells that lent
	// their processor in it, lends their counts by node/column/row
	// (stateLoop's own).
	stats *api.NodesReport
	lent  []LentCell
	lends map[lendKey]uint64
	tl    *timeline
	// tlReset: the timeline started again from nothing (an agent's
	// history went backwards): its next event is the full form.
	tlReset bool
	// cursor names the newest record tl has of each agent: a statistics
	// reading asks only for the records after it.
	cursor api.Cursor

	mu   sync.Mutex // guards subs, last, tlN, tlFull
	subs map[*Sub]struct{}
	last [kinds][]byte // the last event of each kind
	// tlN numbers the timeline events; tlFull is the full form of event
	// tlN (TimelineEvent as JSON): a new page's first timeline event, and
	// GET /ui/timeline's answer to a page that missed one.
	tlN    uint64
	tlFull []byte
}

// The kinds of events, in the order a page takes them: the state, the
// timeline (every StatsEvery: the largest), the slice.
const (
	kindState = iota
	kindTimeline
	kindSlice
	kinds
)

// NewHub returns a hub reading src; zero rates in cfg take the defaults'.
func NewHub(src Source, cfg HubConfig) *Hub {
	d := DefaultHubConfig()
	if cfg.SliceEvery <= 0 {
		cfg.SliceEvery = d.SliceEvery
	}
	if cfg.StateEvery <= 0 {
		cfg.StateEvery = d.StateEvery
	}
	if cfg.StatsEvery <= 0 {
		cfg.StatsEvery = d.StatsEvery
	}
	return &Hub{src: src, cfg: cfg, kick: make(chan struct{}, 1), done: make(chan struct{}), subs: map[*Sub]struct{}{},
		tl: newTimeline(TimelineSlices)}
}

// Sub is one page's subscription.
type Sub struct {
	wake chan struct{} // capacity 1: events are pending

	mu      sync.Mutex
	pending [kinds][]byte
}

// Wake is signalled when events are pending (Take them).
func (s *Sub) Wake() <-chan struct{} { return s.wake }

// Take returns the pending events, encoded: the state, the timeline, the
// slice.
func (s *Sub) Take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for k, ev := range s.pending {
		if ev != nil {
			out = append(out, ev)
			s.pending[k] = nil
		}
	}
	return out
}

// offer makes events pending (nil: none of that kind), each replacing the
// one of its kind not yet taken.
func (s *Sub) offer(evs [kinds][]byte) {
	s.mu.Lock()
	for k, ev := range evs {
		if ev != nil {
			s.pending[k] = ev
		}
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Subscribe adds a page; it gets the latest events at once. Call the
// returned function when the page leaves.
func (h *Hub) Subscribe() (*Sub, func()) {
	s := &Sub{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	idle := len(h.subs) == 0
	h.subs[s] = struct{}{}
	last := h.last
	state := last[kindState]
	// The timeline's last event is a delta: a new page needs it all.
	if h.tlFull != nil {
		last[kindTimeline] = event("timeline", h.tlFull)
	}
	h.mu.Unlock()
	s.offer(last)
	// The state loop sleeps with no page open, and a page needs a state
	// to draw anything: wake it then. Other pages get the latest state
	// (at most StateEvery old): many opening at once cost no reading.
	if idle || state == nil {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
	return s, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

// Timeline is the full form of the last timeline event, as JSON (a
// TimelineEvent; N 0 and no records before the first).
func (h *Hub) Timeline() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tlFull == nil {
		return []byte(`{"n":0,"full":true,"max":` + fmt.Sprint(TimelineSlices) + `,"nodes":[],"recs":[]}`)
	}
	return h.tlFull
}

// Subscribers is the number of open pages.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Done is closed when Run has returned: pages should end their streams.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Run reads the source and publishes until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	defer close(h.done)
	var wg sync.WaitGroup
	wg.Go(func() { h.stateLoop(ctx) })
	defer wg.Wait()
	t := time.NewTicker(h.cfg.SliceEvery)
	defer t.Stop()
	var lastSeq uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if h.Subscribers() == 0 {
			continue
		}
		seq, row := h.src.Slice()
		if seq == lastSeq {
			continue
		}
		lastSeq = seq
		h.publish(kindSlice, event("slice", fmt.Appendf(nil, `{"seq":%d,"row":%d}`, seq, row)))
	}
}

func (h *Hub) stateLoop(ctx context.Context) {
	var lastStats time.Time
	var last State
	// The first reading goes without the statistics (they ask every
	// agent): a page shows the matrix at once, its health a reading later.
	first := true
	for {
		if h.Subscribers() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-h.kick:
			}
		}
		withStats := !first && time.Since(lastStats) >= h.cfg.StatsEvery
		first = false
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := h.src.State(fctx, withStats, h.cursor)
		cancel()
		if err != nil && withStats && ctx.Err() == nil {
			// An agent slow to answer for its statistics must not keep
			// the queue and the matrix from the pages: read them alone,
			// and the statistics again in StatsEvery.
			lastStats = time.Now()
			withStats = false
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			st, err = h.src.State(fctx, false, nil)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			st = last
			st.Error = err.Error()
		} else {
			for i := range st.Jobs {
				st.Jobs[i] = PublicJob(st.Jobs[i])
			}
			if withStats && len(h.cursor.Behind(st.Nodes)) > 0 {
				// An agent's history went backwards (it restarted): what
				// the timeline has of it is gone there. Start again from
				// nothing: the next reading (in StateEvery) asks every
				// agent for all it keeps.
				h.tl, h.cursor = newTimeline(TimelineSlices), nil
				h.tlReset = true
				withStats = false
				lastStats = time.Time{}
			}
			if withStats {
				lastStats = time.Now()
				h.stats = &st.Nodes
				h.lent = h.lentCells(st.Nodes)
				h.publishTimeline(h.addRecords(&st.Nodes))
			} else {
				h.keepStats(&st.Nodes)
			}
			st.Lent = h.lent
			last = st
		}
		b, jerr := json.Marshal(st)
		if jerr == nil {
			h.publish(kindState, event("state", b))
		}
		timer := time.NewTimer(h.cfg.StateEvery)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-h.kick:
			timer.Stop()
		}
	}
}

// publishTimeline numbers the next timeline event and sends the pages the
// records new to the timeline (after a reset, all of them, as the full
// form); it keeps the full form for new pages and GET /ui/timeline. Pages
// get only the records they lack (a few KB rather than all the timeline,
// about 100 KB, every StatsEvery); one that missed an event (it read
// slowly: a newer one replaced it) sees a gap in the numbers and asks for
// the full form.
func (h *Hub) publishTimeline(added []tlRecord) {
	if len(added) == 0 && !h.tlReset {
		return
	}
	h.mu.Lock()
	n := h.tlN + 1
	h.mu.Unlock()
	full := h.tl.encode(n, true, h.tl.records())
	delta := full // the first event, or the first after a reset, is all of it
	if !h.tlReset && n > 1 {
		delta = h.tl.encode(n, false, added)
	}
	h.tlReset = false
	// The full form first: a page that sees event n and asks for the
	// full form gets n or later.
	h.mu.Lock()
	h.tlN, h.tlFull = n, full
	h.mu.Unlock()
	h.publish(kindTimeline, event("timeline", delta))
}

// addRecords moves the nodes' slice records out of the report into the
// timeline, keeps the report's cursor for the next reading, and returns
// the records new to the timeline.
func (h *Hub) addRecords(r *api.NodesReport) []tlRecord {
	// A cursor that does not parse (never from a controller of this
	// version) reads everything again: the timeline merges by slice.
	h.cursor, _ = api.ParseCursor(r.Cursor)
	records := map[string][]telemetry.SliceRecord{}
	for _, n := range r.Nodes {
		if n.Stats != nil && len(n.Stats.Records) > 0 {
			records[n.Name] = n.Stats.Records
			n.Stats.Records = nil
		}
	}
	return h.tl.add(records)
}

type lendKey struct {
	node     string
	col, row int
}

// lentCells maps the nodes' lends (per local slot) onto the matrix's cells
// and counts those since the previous reading.
func (h *Hub) lentCells(r api.NodesReport) []LentCell {
	var out []LentCell
	seen := map[lendKey]uint64{}
	for _, n := range r.Nodes {
		if n.Stats == nil {
			continue
		}
		for _, l := range n.Stats.Lends {
			if l.Slot < 0 || l.Slot >= len(n.Columns) {
				continue // a slot the controller gave no column: not in the matrix
			}
			k := lendKey{n.Name, n.Columns[l.Slot], l.Row}
			seen[k] = l.Count
			prev, ok := h.lends[k]
			if !ok || prev > l.Count { // new, or the agent restarted
				prev = 0
			}
			out = append(out, LentCell{Node: n.Name, Column: k.col, Row: l.Row, Count: l.Count, Recent: l.Count - prev})
		}
	}
	h.lends = seen
	return out
}

// keepStats copies the last statistics into a report without them.
func (h *Hub) keepStats(r *api.NodesReport) {
	if h.stats == nil {
		return
	}
	r.Cluster, r.Skew = h.stats.Cluster, h.stats.Skew
	by := map[string]*api.NodeStats{}
	for _, n := range h.stats.Nodes {
		by[n.Name] = n.Stats
	}
	for i := range r.Nodes {
		if r.Nodes[i].Stats == nil {
			r.Nodes[i].Stats = by[r.Nodes[i].Name]
		}
	}
}

// publish sends an event of a kind to every page, unless it is the one of
// that kind published last.
func (h *Hub) publish(kind int, ev []byte) {
	h.mu.Lock()
	if bytes.Equal(ev, h.last[kind]) {
		h.mu.Unlock()
		return
	}
	h.last[kind] = ev
	subs := make([]*Sub, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	var evs [kinds][]byte
	evs[kind] = ev
	for _, s := range subs {
		s.offer(evs)
	}
}

// event encodes one server-sent event (data holds no newline: JSON).
func event(name string, data []byte) []byte {
	b := make([]byte, 0, len(name)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// PublicJob is a job as anyone may see it: its place (row, rows, columns,
// nodes), owner, name, size, state and times, without its command,
// directory, environment or ranks (GET /v1/jobs/ID shows those to its
// owner and operators).
func PublicJob(j api.Job) api.Job {
	j.Spec.Command, j.Spec.Dir, j.Spec.Env, j.Spec.SubmitKey = nil, "", nil, ""
	j.Ranks = nil
	return j
}
