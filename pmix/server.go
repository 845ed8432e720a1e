package pmix

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/scratch"
	"github.com/cosched/cosched/pmi"
)

// keyPrefix names a node's part of a fence in the barrier the agents
// gather (pmi.Barrier.Puts): "pmix.NODE", its value the part in base64.
const keyPrefix = "pmix."

// settle bounds how long Failure waits for the helper's answer to a
// ping.
const settle = time.Second

// Hooks connect a Server to its agent; called from a helper's reader
// goroutine, without the server's lock.
type Hooks struct {
	// Barrier forwards the node's part of a fence (every local rank is in
	// it) to the gatherer, as a PMI-1 barrier; the agent answers with
	// Server.BarrierDone.
	Barrier func(job int64, b pmi.Barrier)
	// Fail ends a job: a rank aborted or the job's helper died. The
	// reason is also what Failure reports for the job's ranks.
	Fail func(job int64, reason string)
}

// JobConfig is one job on one agent.
type JobConfig struct {
	Job    int64
	Nodes  []string // node of each rank
	Here   string   // this agent's node name
	Helper string   // the helper executable
	// Cred runs the helper as the job's user (nil: the agent's); its
	// directory belongs to that user.
	Cred *syscall.Credential
	// LogDir receives the helper's stderr (pmix-NODE.err).
	LogDir string
}

// Server runs the helpers of an agent's --mpi pmix jobs. Safe for
// concurrent use.
type Server struct {
	hooks Hooks
	log   *zap.Logger
	sweep sync.Once // the abandoned directories of an earlier life, removed at the first job

	mu     sync.Mutex
	jobs   map[int64]*job
	closed bool
}

// tmpDirPrefix begins the name of a job's directory (the helper's
// sockets) in the system's temporary directory.
const tmpDirPrefix = "cosched-pmix-"

type job struct {
	cfg       JobConfig
	h         *helper
	tmpDir    *scratch.Dir // the helper's sockets; nil until made
	epoch     uint64       // the fence being gathered
	connected map[int]bool
	finalized map[int]bool
	failure   string
	ended     bool
}

// NewServer returns a server with no jobs.
func NewServer(h Hooks, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{hooks: h, log: log, jobs: map[int64]*job{}}
}

// Nspace is a job's PMIx namespace.
func Nspace(job int64) string { return "cosched." + strconv.FormatInt(job, 10) }

// AddJob starts the job's helper on this node and returns each local
// rank's environment (PMIx's, from PMIx_server_setup_fork). The ranks
// must start after it returns.
func (s *Server) AddJob(ctx context.Context, cfg JobConfig) (map[int][]string, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("pmix: server closed")
	}
	if _, ok := s.jobs[cfg.Job]; ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("pmix: job %d is already served", cfg.Job)
	}
	j := &job{cfg: cfg, connected: map[int]bool{}, finalized: map[int]bool{}}
	s.jobs[cfg.Job] = j
	s.mu.Unlock()
	env, err := s.start(ctx, j)
	if err != nil {
		s.mu.Lock()
		delete(s.jobs, cfg.Job)
		s.mu.Unlock()
		if j.tmpDir != nil {
			j.tmpDir.Remove()
		}
		return nil, err
	}
	return env, nil
}

func (s *Server) start(ctx context.Context, j *job) (map[int][]string, error) {
	cfg := j.cfg
	if st, err := os.Stat(cfg.Helper); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--mpi pmix: agent %s has no PMIx helper (build it with `make build`, which puts %s in lib/cosched/ beside bin/cosched; it needs libpmix-dev): looked for %s: %s",
			cfg.Here, HelperName, cfg.Helper, statWhy(err))
	}
	// The directories an earlier agent died without removing (its
	// helpers died with it) go first, once a life: this agent's own
	// jobs remove theirs.
	s.sweep.Do(func() {
		for _, d := range scratch.Sweep(os.TempDir(), tmpDirPrefix, nil) {
			s.log.Info("removed an abandoned PMIx directory", zap.String("dir", d))
		}
	})
	tmp, err := scratch.Make(tmpDirPrefix + strconv.FormatInt(cfg.Job, 10) + "-")
	if err != nil {
		return nil, fmt.Errorf("pmix: %w", err)
	}
	j.tmpDir = tmp
	dir := tmp.Path()
	if cfg.Cred != nil {
		if err := os.Chown(dir, int(cfg.Cred.Uid), int(cfg.Cred.Gid)); err != nil {
			return nil, fmt.Errorf("pmix: %w", err)
		}
	}
	var errFile *os.File
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, 0o755); err == nil {
			errFile, _ = os.OpenFile(filepath.Join(cfg.LogDir, "pmix-"+cfg.Here+".err"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		}
	}
	if errFile != nil {
		defer errFile.Close() // the helper has its copy
	}
	id := cfg.Job
	h, env, err := startHelper(ctx, helperConfig{
		path: cfg.Helper, nspace: Nspace(id), tmpDir: dir, nodes: cfg.Nodes, here: cfg.Here, cred: cfg.Cred, stderr: errFile,
	}, helperEvents{
		fence:     func(data []byte) { s.fence(id, data) },
		abort:     func(rank, code int, msg string) { s.abort(id, rank, code, msg) },
		connected: func(rank int) { s.mark(id, rank, true) },
		finalized: func(rank int) { s.mark(id, rank, false) },
		ended:     func(why string) { s.ended(id, why) },
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	j.h = h
	s.mu.Unlock()
	s.log.Debug("PMIx helper ready", zap.Int64("job", id))
	for r, e := range env {
		env[r] = append(e, OpenMPIEnv(dir)...)
	}
	return env, nil
}

// OpenMPIEnv is what an Open MPI 4.1 rank needs besides PMIx's own
// variables to start as a direct-launched rank of its job:
//   - OMPI_MCA_ess=pmi, and its "orte" launch detector (schizo) off,
//     which would otherwise declare a rank that mpirun did not start a
//     singleton and override the choice (Slurm's srun is recognised by
//     its own detector from SLURM_* variables; cosched has none);
//   - its shared-memory transport's files in the job's directory on this
//     node rather than /dev/shm, whose names (host, job, local rank)
//     would collide between two agents of one host (a local cluster).
func OpenMPIEnv(dir string) []string {
	return []string{
		"OMPI_MCA_ess=pmi",
		"OMPI_MCA_schizo=^orte",
		"OMPI_MCA_btl_vader_backing_directory=" + dir,
	}
}

func statWhy(err error) string {
	switch {
	case err == nil:
		return "not a regular file"
	case os.IsNotExist(err):
		return "no such file"
	}
	return err.Error()
}

func (s *Server) fence(id int64, data []byte) {
	s.mu.Lock()
	j := s.jobs[id]
	if j == nil {
		s.mu.Unlock()
		return
	}
	b := pmi.Barrier{Epoch: j.epoch, Puts: map[string]string{keyPrefix + j.cfg.Here: base64.StdEncoding.EncodeToString(data)}}
	s.mu.Unlock()
	s.log.Debug("PMIx fence in", zap.Int64("job", id), zap.Uint64("epoch", b.Epoch), zap.Int("bytes", len(data)))
	s.hooks.Barrier(id, b)
}

// BarrierDone ends a job's fence with every node's part (from the
// gatherer). An end of another fence is ignored.
func (s *Server) BarrierDone(id int64, b pmi.Barrier) {
	s.mu.Lock()
	j := s.jobs[id]
	if j == nil || j.h == nil || b.Epoch != j.epoch {
		s.mu.Unlock()
		return
	}
	j.epoch++
	s.log.Debug("PMIx fence out", zap.Int64("job", id), zap.Uint64("epoch", b.Epoch))
	h := j.h
	s.mu.Unlock()
	keys := make([]string, 0, len(b.Puts))
	for k := range b.Puts {
		if strings.HasPrefix(k, keyPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var data []byte
	for _, k := range keys {
		part, err := base64.StdEncoding.DecodeString(b.Puts[k])
		if err != nil {
			s.Fail(id, fmt.Sprintf("PMIx: fence %d: the part of %s is not base64: %v", b.Epoch, strings.TrimPrefix(k, keyPrefix), err))
			return
		}
		data = append(data, part...)
	}
	if err := h.fenceDone(0, data); err != nil {
		s.Fail(id, fmt.Sprintf("PMIx: the job's PMIx server on %s does not take the end of fence %d: %v", j.cfg.Here, b.Epoch, err))
	}
}

func (s *Server) abort(id int64, rank, code int, msg string) {
	s.mu.Lock()
	j := s.jobs[id]
	if j == nil {
		s.mu.Unlock()
		return
	}
	reason := fmt.Sprintf("PMIx: rank %d called MPI_Abort/PMIx_Abort (exit code %d)", rank, code)
	if msg = strings.TrimSpace(msg); msg != "" && msg != "N/A" { // Open MPI 4.1 passes N/A
		reason += ": " + truncate(msg, 512)
	}
	first := j.failure == ""
	if first {
		j.failure = reason
	}
	s.mu.Unlock()
	if first {
		s.hooks.Fail(id, reason)
	}
}

func (s *Server) mark(id int64, rank int, connected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	if j == nil {
		return
	}
	if connected {
		j.connected[rank] = true
	} else {
		j.finalized[rank] = true
	}
}

func (s *Server) ended(id int64, why string) {
	s.mu.Lock()
	j := s.jobs[id]
	if j == nil || j.ended {
		s.mu.Unlock()
		return
	}
	j.ended = true
	reason := ""
	if j.failure == "" {
		reason = fmt.Sprintf("PMIx: the job's PMIx server on %s ended: %s", j.cfg.Here, truncate(why, 512))
		j.failure = reason
	}
	s.mu.Unlock()
	if reason != "" {
		s.hooks.Fail(id, reason)
	}
}

// Fail records a reason for a job (the first one stays) and ends it
// (Hooks.Fail).
func (s *Server) Fail(id int64, reason string) {
	s.mu.Lock()
	j := s.jobs[id]
	first := j != nil && j.failure == ""
	if first {
		j.failure = reason
	}
	s.mu.Unlock()
	if first {
		s.hooks.Fail(id, reason)
	}
}

// Has reports whether a job is served here.
func (s *Server) Has(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id] != nil
}

// Failure is why a rank's end fails the job ("" if it does not, or the
// job is not served here): the job's failure (an abort, its helper's
// death), or, for a rank that ended cleanly after PMIx_Init without
// PMIx_Finalize, that. The rank's abort or finalize travel on the
// helper's pipe, its exit another way: Failure first waits for the
// helper to answer a ping, so that everything it said before the rank
// ended has been read.
func (s *Server) Failure(id int64, rank int, cleanExit bool) string {
	s.mu.Lock()
	j := s.jobs[id]
	if j == nil {
		s.mu.Unlock()
		return ""
	}
	h := j.h
	s.mu.Unlock()
	if h != nil {
		h.sync(settle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case j.failure != "":
		return j.failure
	case cleanExit && j.connected[rank] && !j.finalized[rank]:
		return fmt.Sprintf("PMIx: rank %d ended after PMIx_Init (MPI_Init) without PMIx_Finalize (MPI_Finalize)", rank)
	}
	return ""
}

// RemoveJob stops a job's helper (after its last local rank ended) and
// removes its directory.
func (s *Server) RemoveJob(id int64) {
	s.mu.Lock()
	j := s.jobs[id]
	delete(s.jobs, id)
	s.mu.Unlock()
	if j == nil {
		return
	}
	if j.h != nil {
		j.h.stop(5 * time.Second)
	}
	if j.tmpDir != nil {
		j.tmpDir.Remove()
	}
}

// Close stops every helper. Idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	ids := make([]int64, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.RemoveJob(id)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
