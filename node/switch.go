package node

import (
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/node/rank"
)

// switcher is an agent's view of which of its jobs run in which rows, and
// of the row the cluster is in. Strobes (the follower's goroutine) switch
// rows; launches, kills and alternates (the control goroutine) change the
// jobs. One mutex serialises them, so a job launched mid-slice starts
// exactly in the right state.
type switcher struct {
	mu     sync.Mutex
	ranks  *rank.Manager
	log    *zap.Logger
	shared bool // rows rotate: ranks run only in their rows' slices
	row    int  // the current slice's row; -1 before the first strobe
	jobs   map[int64]*localJob
}

type localJob struct {
	rows    []int
	running bool
}

func newSwitcher(ranks *rank.Manager, shared bool, log *zap.Logger) *switcher {
	return &switcher{ranks: ranks, shared: shared, log: log, row: -1, jobs: map[int64]*localJob{}}
}

// setShared switches time sharing on or off (the controller's mode, from
// its hello). Turning it off continues every job.
func (s *switcher) setShared(shared bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shared = shared
	if !shared {
		for id, j := range s.jobs {
			if !j.running {
				s.set(id, j, true)
			}
		}
	}
}

func (s *switcher) isShared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared
}

// add registers a job whose ranks were just started (stopped when rows
// rotate) and continues them if their row is running.
func (s *switcher) add(job int64, rows []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := &localJob{rows: slices.Clone(rows), running: !s.shared}
	s.jobs[job] = j
	if s.shared && slices.Contains(j.rows, s.row) {
		s.set(job, j, true)
	}
}

// setRows changes the rows a job runs in (alternative scheduling).
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
	if s.shared && row == s.row {
		s.set(job, j, on)
	}
}

// remove forgets a job (it is being killed, or all its ranks ended).
func (s *switcher) remove(job int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, job)
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

// Switch moves to row: stops the ranks of jobs that do not run in it,
// then continues those that do, and returns how long that took. It is the
// strobe follower's callback.
func (s *switcher) Switch(row int) time.Duration {
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.row = row
	if !s.shared {
		return 0
	}
	// Stop first, so two rows never run together on this node. Once kill
	// returns, a stopped rank executes no more of its program: SIGSTOP
	// cannot be blocked, and a task handles pending signals before it
	// returns to user mode. (Its /proc state may still read R for a while,
	// until it gets a CPU to take the stop on; nothing to wait for.)
	for id, j := range s.jobs {
		if j.running && !slices.Contains(j.rows, row) {
			s.set(id, j, false)
		}
	}
	for id, j := range s.jobs {
		if !j.running && slices.Contains(j.rows, row) {
			s.set(id, j, true)
		}
	}
	return time.Since(start)
}

func (s *switcher) set(id int64, j *localJob, run bool) {
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
