package node

import (
	"slices"
	"sync"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/sharing"
	"go.uber.org/zap"
)

// signaller stops and continues ranks (rank.Manager; a fake in tests).
type signaller interface {
	Stop(job int64) error
	Cont(job int64) error
	StopRank(job int64, rank int) error
	ContRank(job int64, rank int) error
}

// switcher is an agent's view of which of its jobs run in which rows, and
// of the row the cluster is in. Strobes (the follower's goroutine) switch
// rows; launches, kills and alternates (the control goroutine) change the
// jobs; the relay reports ranks blocking and unblocking. One mutex
// serialises them, so a job launched mid-slice starts exactly in the
// right state.
//
// Gang mode works per job: a job's ranks here are stopped or continued
// together. BCS mode (reuse) works per rank and per processor slot: in
// each slot the rank of the slice's row runs; when it is blocked in
// communication, or the row has no rank there, the next ready rank of that
// slot, in row order after the slice's row, is continued too and runs
// until the row's rank can proceed (process-level slot reuse, as the
// simulator's BCS model does it). The blocked rank is not stopped: it
// sleeps in the relay, and must stay able to time out.
type switcher struct {
	mu     sync.Mutex
	ranks  signaller
	log    *zap.Logger
	shared bool // rows rotate: ranks run only in their rows' slices
	reuse  bool // BCS: per-rank control with slot reuse
	mpl    int
	row    int // the current slice's row; -1 before the first strobe
	jobs   map[int64]*localJob
	reuses uint64 // ranks continued to reuse a slot
	// lends counts, per slot and row, the slices of that row in which
	// the slot was lent to another row's rank: the matrix cell (row,
	// slot's column) that lent its processor. Bounded: slots × MPL.
	lends map[lendKey]uint64
}

type lendKey struct{ slot, row int }

type localJob struct {
	rows    []int
	running bool // job-level control: its ranks are continued
	ranks   map[int]*localRank
}

type localRank struct {
	slot    int
	blocked bool // in communication (the relay says)
	exited  bool
	running bool // per-rank control: continued
}

func newSwitcher(ranks signaller, shared bool, log *zap.Logger) *switcher {
	return &switcher{ranks: ranks, shared: shared, log: log, row: -1, mpl: 1, jobs: map[int64]*localJob{}, lends: map[lendKey]uint64{}}
}

// configure sets the controller's mode (from its hello): whether rows
// rotate, whether slots are reused, and the number of rows.
func (s *switcher) configure(mode sharing.Mode, mpl int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shared, reuse := mode.TimeShared(), mode == sharing.BCS
	if reuse != s.reuse {
		// Change of granularity: stop everything, then let the new mode
		// decide what runs.
		for id, j := range s.jobs {
			s.setJob(id, j, false)
			for _, r := range j.ranks {
				r.running = false
			}
		}
	}
	s.shared, s.reuse, s.mpl = shared, reuse, max(mpl, 1)
	s.applyLocked()
}

func (s *switcher) isShared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared
}

// add registers a job whose ranks (rank → local slot) are about to start,
// stopped when rows rotate. Its rows follow with setRow.
func (s *switcher) add(job int64, slots map[int]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := &localJob{ranks: map[int]*localRank{}}
	for r, slot := range slots {
		j.ranks[r] = &localRank{slot: slot}
	}
	s.jobs[job] = j
	s.applyLocked()
}

// setRow adds or removes a row a job runs in (its own, or alternative
// scheduling).
func (s *switcher) setRow(job int64, row int, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[job]
	if j == nil {
		return
	}
	if on && !slices.Contains(j.rows, row) {
		j.rows = append(j.rows, row)
	} else if !on {
		j.rows = slices.DeleteFunc(j.rows, func(r int) bool { return r == row })
	}
	s.applyLocked()
}

// blocked records that a rank is (or no longer is) blocked in
// communication, and in BCS mode lends or returns its slot.
func (s *switcher) blocked(job int64, rank int, b bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[job]; j != nil {
		if r := j.ranks[rank]; r != nil {
			r.blocked = b
			if s.reuse {
				s.applyLocked()
			}
		}
	}
}

// rankExited forgets a rank that ended; its slot may go to another.
func (s *switcher) rankExited(job int64, rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[job]; j != nil {
		if r := j.ranks[rank]; r != nil {
			r.exited, r.running = true, false
			if s.reuse {
				s.applyLocked()
			}
		}
	}
}

// remove forgets a job (it is being killed, or all its ranks ended).
func (s *switcher) remove(job int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, job)
	if s.reuse {
		s.applyLocked() // its slots may go to others
	}
}

// jobIDs lists the jobs with ranks here.
func (s *switcher) jobIDs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// slotReuses counts the ranks continued to reuse a slot.
func (s *switcher) slotReuses() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reuses
}

// slotLends lists, per slot and row, how often the slot lent its
// processor in that row's slices (ordered by slot, then row).
func (s *switcher) slotLends() []api.SlotLends {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.SlotLends, 0, len(s.lends))
	for k, n := range s.lends {
		out = append(out, api.SlotLends{Slot: k.slot, Row: k.row, Count: n})
	}
	slices.SortFunc(out, func(a, b api.SlotLends) int {
		if a.Slot != b.Slot {
			return a.Slot - b.Slot
		}
		return a.Row - b.Row
	})
	return out
}

// rankStates says what each of a job's ranks here does in the current
// slice (nil: the job has no ranks here), and the slice's row.
func (s *switcher) rankStates(job int64) ([]api.RankLive, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[job]
	if j == nil {
		return nil, s.row
	}
	perRank := s.reuse && s.shared
	out := make([]api.RankLive, 0, len(j.ranks))
	for rk, r := range j.ranks {
		l := api.RankLive{Rank: rk, State: api.RankStopped}
		running := !s.shared || j.running
		if perRank {
			running = r.running
		}
		switch {
		case r.exited:
			l.State = api.RankExited
		case r.blocked && running:
			l.State = api.RankBlocked
		case running:
			l.State = api.RankRunning
			l.Reusing = perRank && !slices.Contains(j.rows, s.row)
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b api.RankLive) int { return a.Rank - b.Rank })
	return out, s.row
}

// Switch moves to row and returns how long stopping and continuing took.
// It is the strobe follower's callback.
func (s *switcher) Switch(row int) time.Duration {
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.row = row
	if !s.shared {
		return 0
	}
	s.applyLocked()
	return time.Since(start)
}

// applyLocked makes what runs match the current row. It always stops
// first, so two rows never run together in a slot. Once kill returns, a
// stopped rank executes no more of its program: SIGSTOP cannot be
// blocked, and a task handles pending signals before it returns to user
// mode. (Its /proc state may still read R for a while, until it gets a
// CPU to take the stop on; nothing to wait for.)
func (s *switcher) applyLocked() {
	if s.reuse && s.shared {
		s.applyRanksLocked()
		return
	}
	runs := func(j *localJob) bool { return !s.shared || slices.Contains(j.rows, s.row) }
	for id, j := range s.jobs {
		if j.running && !runs(j) {
			s.setJob(id, j, false)
		}
	}
	for id, j := range s.jobs {
		if !j.running && runs(j) {
			s.setJob(id, j, true)
		}
	}
}

// applyRanksLocked is BCS's per-slot decision.
func (s *switcher) applyRanksLocked() {
	type cand struct {
		job   int64
		rank  int
		r     *localRank
		order int // 0: runs in the slice's row; k: k rows after it
	}
	bySlot := map[int][]cand{}
	for id, j := range s.jobs {
		order := s.mpl + 1 // in no row at all: never runs
		if s.row >= 0 {
			for _, row := range j.rows {
				order = min(order, ((row-s.row)%s.mpl+s.mpl)%s.mpl)
			}
		}
		for rk, r := range j.ranks {
			if !r.exited && order <= s.mpl {
				bySlot[r.slot] = append(bySlot[r.slot], cand{id, rk, r, order})
			}
		}
	}
	want := map[*localRank]bool{}
	reuse := map[*localRank]bool{}
	for _, cs := range bySlot {
		slices.SortFunc(cs, func(a, b cand) int {
			if a.order != b.order {
				return a.order - b.order
			}
			if a.job != b.job {
				return int(a.job - b.job)
			}
			return a.rank - b.rank
		})
		// The row's ranks run unless every one of them is blocked (or
		// the row has none here) and another rank of the slot is ready.
		ready := slices.IndexFunc(cs, func(c cand) bool { return !c.r.blocked })
		switch {
		case cs[0].order == 0 && (ready < 0 || cs[ready].order == 0):
			for _, c := range cs {
				if c.order == 0 {
					want[c.r] = true
				}
			}
		case ready >= 0:
			want[cs[ready].r] = true
			reuse[cs[ready].r] = true
			// The row's blocked ranks stay continued: asleep in the
			// relay they use no CPU, and stopped they could not notice
			// their own timeouts (and say they stopped waiting).
			for _, c := range cs {
				if c.order == 0 {
					want[c.r] = true
				}
			}
		}
	}
	for id, j := range s.jobs {
		for rk, r := range j.ranks {
			if r.running && !want[r] {
				s.setRank(id, rk, r, false)
			}
		}
	}
	for id, j := range s.jobs {
		for rk, r := range j.ranks {
			if !r.running && want[r] {
				s.setRank(id, rk, r, true)
				if reuse[r] {
					s.reuses++
					s.lends[lendKey{r.slot, s.row}]++
				}
			}
		}
	}
}

func (s *switcher) setJob(id int64, j *localJob, run bool) {
	var err error
	if run {
		err = s.ranks.Cont(id)
	} else {
		err = s.ranks.Stop(id)
	}
	if err != nil {
		s.log.Debug("signal ranks", zap.Int64("job", id), zap.Bool("run", run), zap.Error(err))
	}
	j.running = run
}

func (s *switcher) setRank(id int64, rk int, r *localRank, run bool) {
	var err error
	if run {
		err = s.ranks.ContRank(id, rk)
	} else {
		err = s.ranks.StopRank(id, rk)
	}
	if err != nil {
		s.log.Debug("signal rank", zap.Int64("job", id), zap.Int("rank", rk), zap.Bool("run", run), zap.Error(err))
	}
	r.running = run
}
