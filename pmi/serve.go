package pmi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// FD is the descriptor a rank finds its PMI connection on: the file
// Server.Rank returns must be the rank's first extra file (after stdin,
// stdout and stderr).
const FD = 3

// writeTimeout bounds a reply's write: a rank that stops reading its PMI
// socket cannot block the agent.
const writeTimeout = 5 * time.Second

// Hooks connect a Server to its agent. They are called without the
// server's lock held and must not call back into the Server synchronously
// from the same goroutine for the same job more than once.
type Hooks struct {
	// Barrier forwards a job's local barrier (every local rank is in it)
	// to the gatherer; the agent answers with Server.BarrierDone.
	Barrier func(job int64, b Barrier)
	// Fail ends a job: a rank aborted or broke the protocol. The reason
	// is also what Failure reports for the job's ranks.
	Fail func(job int64, reason string)
	// Ended, if set, records the state a job reached at the end of a
	// barrier (Snapshot), before any rank hears of that end: an agent
	// that keeps its ranks across restarts stores it for its next life
	// (RestoreJob). It may block on a disk write.
	Ended func(job int64, sn Snapshot)
}

// Server is an agent's PMI-1 server: one socketpair per rank, one reader
// goroutine per connection, the protocol in Job. Safe for concurrent use.
type Server struct {
	hooks Hooks
	log   *zap.Logger

	mu        sync.Mutex
	jobs      map[int64]*jobServer
	closed    bool
	listeners []net.Listener // ServeResume's, closed by Close
	wg        sync.WaitGroup
}

type jobServer struct {
	id      int64
	pmi     *Job
	conns   map[int]*rankConn
	failure string // the first reason the job failed, "" if none
}

type rankConn struct {
	rank      int
	conn      net.Conn
	errPath   string // the rank's stderr file, where MPICH writes an abort's message
	wmu       sync.Mutex
	inited    bool
	finalized bool
}

// NewServer returns a server with no jobs.
func NewServer(h Hooks, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{hooks: h, log: log, jobs: map[int64]*jobServer{}}
}

// AddJob registers a job whose rank r runs on nodes[r]; here is this
// agent's node name.
func (s *Server) AddJob(job int64, nodes []string, here string) {
	s.RestoreJob(job, nodes, here, nil)
}

// RestoreJob is AddJob for a job whose ranks a previous life of the agent
// served: the job starts at snapshot sn (nil: from scratch), and its
// ranks come back through ServeResume.
func (s *Server) RestoreJob(job int64, nodes []string, here string, sn *Snapshot) {
	var local []int
	for r, n := range nodes {
		if n == here {
			local = append(local, r)
		}
	}
	cfg := JobConfig{KVSName: "cosched_" + strconv.FormatInt(job, 10), Size: len(nodes), Local: local,
		Preset: map[string]string{"PMI_process_mapping": ProcessMapping(nodes)}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[job]; !ok {
		j := NewJob(cfg)
		if sn != nil {
			j.restore(*sn)
		}
		s.jobs[job] = &jobServer{id: job, pmi: j, conns: map[int]*rankConn{}}
	}
}

// Env is the environment a rank of a job laid out on nodes gets:
// PMI_FD, PMI_RANK, PMI_SIZE (MPICH's simple PMI), and its rank among the
// ranks of its node: MPI_LOCALRANKID and MPI_LOCALNRANKS (as hydra sets
// them), COSCHED_LOCAL_RANK and COSCHED_LOCAL_SIZE.
func Env(nodes []string, rank int) []string {
	local, per := LocalRanks(nodes)
	return []string{
		"PMI_FD=" + strconv.Itoa(FD),
		"PMI_RANK=" + strconv.Itoa(rank),
		"PMI_SIZE=" + strconv.Itoa(len(nodes)),
		"MPI_LOCALRANKID=" + strconv.Itoa(local[rank]),
		"MPI_LOCALNRANKS=" + strconv.Itoa(per[rank]),
		"COSCHED_LOCAL_RANK=" + strconv.Itoa(local[rank]),
		"COSCHED_LOCAL_SIZE=" + strconv.Itoa(per[rank]),
	}
}

// Rank opens a rank's PMI connection: it returns the rank's end of a
// socketpair, to pass as its first extra file (descriptor FD) and to
// close once the rank is started. errPath is the rank's stderr file.
func (s *Server) Rank(job int64, rank int, errPath string) (*os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pmi: socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "pmi-server")
	child := os.NewFile(uintptr(fds[1]), "pmi-rank")
	conn, err := net.FileConn(ours)
	ours.Close() // FileConn dups it
	if err != nil {
		child.Close()
		return nil, fmt.Errorf("pmi: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.jobs[job]
	switch {
	case s.closed:
		err = errors.New("pmi: server closed")
	case js == nil:
		err = fmt.Errorf("pmi: job %d not added", job)
	case js.pmi.ranks[rank] == nil:
		err = fmt.Errorf("pmi: rank %d of job %d does not run here", rank, job)
	case js.conns[rank] != nil:
		err = fmt.Errorf("pmi: rank %d of job %d already connected", rank, job)
	}
	if err != nil {
		conn.Close()
		child.Close()
		return nil, err
	}
	rc := &rankConn{rank: rank, conn: conn, errPath: errPath}
	js.conns[rank] = rc
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serve(js, rc)
	}()
	return child, nil
}

// serve reads one rank's commands until its connection ends.
func (s *Server) serve(js *jobServer, rc *rankConn) {
	defer rc.conn.Close()
	r := bufio.NewReaderSize(rc.conn, MaxLine)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.fail(js, fmt.Sprintf("PMI: rank %d sent a line longer than %d bytes", rc.rank, MaxLine-1))
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("pmi read", zap.Int64("job", js.id), zap.Int("rank", rc.rank), zap.Error(err))
			}
			return
		}
		line = bytes.TrimRight(line, "\r\n")
		s.mu.Lock()
		out := js.pmi.Handle(rc.rank, line)
		if out.Err == nil {
			rc.inited = true
		}
		if out.Finalized {
			rc.finalized = true
		}
		s.mu.Unlock()
		switch {
		case out.Err != nil:
			s.fail(js, "PMI: "+out.Err.Error())
			return
		case out.Abort != nil:
			msg := abortMessage(rc.errPath)
			reason := fmt.Sprintf("PMI: rank %d called MPI_Abort/PMI_Abort (exit code %d)", out.Abort.Rank, out.Abort.Code)
			if msg != "" {
				reason += ": " + msg
			}
			s.fail(js, reason)
			return
		}
		if out.Reply != nil {
			if err := rc.write(out.Reply); err != nil {
				s.fail(js, fmt.Sprintf("PMI: rank %d does not read its replies: %v", rc.rank, err))
				return
			}
		}
		if out.Barrier != nil && s.hooks.Barrier != nil {
			s.hooks.Barrier(js.id, *out.Barrier)
		}
	}
}

func (rc *rankConn) write(line []byte) error {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	if err := rc.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := rc.conn.Write(line)
	return err
}

// fail records the job's first failure and has the agent end it.
func (s *Server) fail(js *jobServer, reason string) {
	s.mu.Lock()
	first := js.failure == ""
	if first {
		js.failure = reason
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("PMI: ending job", zap.Int64("job", js.id), zap.String("reason", reason))
		if s.hooks.Fail != nil {
			s.hooks.Fail(js.id, reason)
		}
	}
}

// BarrierDone delivers the end of a job's barrier (from the gatherer):
// every local rank gets barrier_out.
func (s *Server) BarrierDone(job int64, b Barrier) {
	s.mu.Lock()
	js := s.jobs[job]
	if js == nil {
		s.mu.Unlock()
		return
	}
	replies, err := js.pmi.BarrierDone(b)
	conns := map[int]*rankConn{}
	for _, r := range replies {
		conns[r.Rank] = js.conns[r.Rank]
	}
	var sn Snapshot
	if err == nil && s.hooks.Ended != nil {
		sn = js.pmi.Snapshot()
	}
	s.mu.Unlock()
	if err != nil {
		s.fail(js, "PMI: "+err.Error())
		return
	}
	if s.hooks.Ended != nil {
		s.hooks.Ended(job, sn) // before any rank is told: see Hooks.Ended
	}
	for _, r := range replies {
		if c := conns[r.Rank]; c != nil {
			if err := c.write(r.Line); err != nil {
				s.fail(js, fmt.Sprintf("PMI: rank %d does not read its replies: %v", r.Rank, err))
			}
		}
	}
}

// Failure is why a rank of the job that just ended counts as failed:
// the job's PMI failure, or, for a rank that exited cleanly after
// PMI_Init without PMI_Finalize, that. "" if none.
func (s *Server) Failure(job int64, rank int, cleanExit bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.jobs[job]
	if js == nil {
		return ""
	}
	if js.failure != "" {
		return js.failure
	}
	if rc := js.conns[rank]; cleanExit && rc != nil && rc.inited && !rc.finalized {
		return "ended after PMI_Init without PMI_Finalize"
	}
	return ""
}

// Fail ends a job's PMI with a reason from outside (the gatherer).
func (s *Server) Fail(job int64, reason string) {
	s.mu.Lock()
	js := s.jobs[job]
	s.mu.Unlock()
	if js != nil {
		s.fail(js, reason)
	}
}

// RemoveJob closes a job's connections and forgets it (its ranks are
// gone).
func (s *Server) RemoveJob(job int64) {
	s.mu.Lock()
	js := s.jobs[job]
	delete(s.jobs, job)
	s.mu.Unlock()
	if js == nil {
		return
	}
	for _, rc := range js.conns {
		rc.conn.Close()
	}
}

// Close closes every connection and waits for the readers.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.listeners {
		ln.Close()
	}
	s.listeners = nil
	var ids []int64
	for id := range s.jobs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.RemoveJob(id)
	}
	s.wg.Wait()
}

// abortMessage is the message MPICH's MPI_Abort wrote to the rank's
// stderr just before sending abort — the PMI-1 wire carries only the exit
// code. MPICH 4.0 writes "Abort(CODE) on node N (rank R in comm C): MSG";
// older simple-PMI clients "aborting job:" and the message on the next
// line. "" if neither is in the file's last 4 KiB.
func abortMessage(errPath string) string {
	if errPath == "" {
		return ""
	}
	f, err := os.Open(errPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 4096
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, fi.Size()-tail)
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(string(buf[:n]), "\n")
	msg := ""
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "Abort("):
			if _, m, ok := strings.Cut(l, "): "); ok {
				msg = m
			}
		case strings.HasSuffix(strings.TrimSpace(l), "aborting job:") && i+1 < len(lines):
			msg = lines[i+1]
		}
	}
	msg = strings.TrimSpace(msg)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
