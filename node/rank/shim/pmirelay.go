package shim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// EnvPMIResume, in a keeper's environment, makes it hold its program's
// PMI-1 connection (MPICH's PMI_FD) so that it outlives the agent: the
// program gets a socket of the keeper's as descriptor 3, and the keeper
// relays its lines to the agent's connection it inherited there. When the
// agent dies the keeper connects to its next life at addr (a unix socket;
// "@name" is abstract) within grace, and resumes (package pmi, "resume":
// the hello, the replay of the commands since the rank's last barrier).
// The value is "addr=ADDR job=J rank=R grace=DURATION"; the program does
// not see the variable.
const EnvPMIResume = "COSCHED_PMI_RESUME"

// Bounds of what a keeper keeps to replay: MPICH's ranks send a handful
// of commands between two barriers. Past them the rank cannot be resumed
// (its PMI socket closes if the agent dies).
const (
	maxReplayLines = 1024
	maxReplayBytes = 1 << 20
)

// pmiRelay is a keeper's side of its program's PMI connection. One
// goroutine reads the program (fromProgram), one the agent (fromAgent,
// which also reconnects); mu orders what they share.
type pmiRelay struct {
	addr      string
	job, rank string
	grace     time.Duration
	prog      *os.File // the keeper's end of the program's socket

	mu        sync.Mutex
	up        *os.File // the agent's connection; nil while it is away
	log       [][]byte // the program's lines since its last barrier_out
	logBytes  int
	overflow  bool // log no longer complete: not resumable
	replied   int  // lines of log whose reply the program has had
	swallow   int  // replies to drop: those to a replay the program had already
	barriers  int  // barrier_outs the program has had
	inited    bool // the program has sent a line
	finalized bool // the program has had finalize_ack
	progDone  bool // the program closed its socket: nothing to resume
}

// newPMIRelay takes over the agent's connection at descriptor upFD and
// returns the program's end of a new socket (to pass as its descriptor
// 3, and to close once it is started).
func newPMIRelay(spec string, upFD int) (*pmiRelay, int, error) {
	r := &pmiRelay{grace: 90 * time.Second}
	for _, f := range strings.Fields(spec) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "addr":
			r.addr = v
		case "job":
			r.job = v
		case "rank":
			r.rank = v
		case "grace":
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, -1, fmt.Errorf("%s: grace: %w", EnvPMIResume, err)
			}
			r.grace = d
		}
	}
	if r.addr == "" || r.job == "" || r.rank == "" {
		return nil, -1, fmt.Errorf("%s=%q: want addr=, job= and rank=", EnvPMIResume, spec)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, -1, fmt.Errorf("PMI socketpair: %w", err)
	}
	r.prog = pollable(fds[0], "pmi-program")
	r.up = pollable(upFD, "pmi-agent")
	return r, fds[1], nil
}

// pollable wraps a socket in a File whose reads can be interrupted and
// given deadlines (non-blocking, in the runtime's poller).
func pollable(fd int, name string) *os.File {
	_ = unix.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), name)
}

// start runs the relay's goroutines; they end with the keeper's process.
func (r *pmiRelay) start() {
	go r.fromProgram()
	go r.fromAgent()
}

// fromProgram forwards the program's lines to the agent, keeping those
// since its last barrier for a replay.
func (r *pmiRelay) fromProgram() {
	br := bufio.NewReaderSize(r.prog, 4096)
	for {
		line, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !full {
			// The program closed its socket or ended: so does the
			// relay, and the agent sees the end as it would the
			// program's own.
			r.mu.Lock()
			r.progDone = true
			if r.up != nil {
				r.up.Close()
			}
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		if full {
			r.overflow = true // not a PMI line: the agent ends the job on it
		} else {
			r.inited = true
			r.logBytes += len(line)
			r.overflow = r.overflow || len(r.log) >= maxReplayLines || r.logBytes > maxReplayBytes
			if !r.overflow {
				r.log = append(r.log, bytes.Clone(line))
			}
		}
		if r.up != nil {
			// A failed write is the agent's death: fromAgent sees it too,
			// reconnects and replays this line with the others.
			_, _ = r.up.Write(line)
		}
		r.mu.Unlock()
	}
}

// fromAgent forwards the agent's replies to the program, and when the
// agent goes, connects to its next life; if none comes within the grace
// (or it cannot resume the rank) it closes the program's socket, whose
// PMI calls then fail.
func (r *pmiRelay) fromAgent() {
	for {
		r.mu.Lock()
		up := r.up
		r.mu.Unlock()
		br := bufio.NewReader(up)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				break
			}
			if !r.deliver(line) {
				break
			}
		}
		r.mu.Lock()
		done := r.progDone
		r.up = nil
		r.mu.Unlock()
		up.Close()
		if done {
			return
		}
		if !r.reconnect() {
			// Shut down, not closed: the program's end sees EOF even
			// while fromProgram still reads the keeper's.
			if rc, err := r.prog.SyscallConn(); err == nil {
				_ = rc.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_RDWR) })
			}
			return
		}
	}
}

// deliver passes one reply to the program, unless it answers a replayed
// command the program already had the answer to.
func (r *pmiRelay) deliver(line []byte) bool {
	r.mu.Lock()
	if r.swallow > 0 {
		r.swallow--
		r.mu.Unlock()
		return true
	}
	switch {
	case bytes.HasPrefix(line, []byte("cmd=barrier_out")):
		r.barriers++
		r.log, r.logBytes, r.replied, r.overflow = nil, 0, 0, false
	case bytes.HasPrefix(line, []byte("cmd=finalize_ack")):
		r.finalized = true
		r.replied++
	default:
		r.replied++
	}
	r.mu.Unlock()
	_, err := r.prog.Write(line)
	return err == nil
}

// reconnect dials the agent until one resumes the rank or the grace ends.
func (r *pmiRelay) reconnect() bool {
	deadline := time.Now().Add(r.grace)
	for time.Now().Before(deadline) {
		ok, final := r.resume()
		if ok || final {
			return ok
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "cosched rank keeper: no agent took back job %s rank %s's PMI connection within %v\n", r.job, r.rank, r.grace)
	return false
}

// resume makes one attempt: ok when the agent took the rank back; final
// when it never will.
func (r *pmiRelay) resume() (ok, final bool) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: r.addr}); err != nil {
		unix.Close(fd)
		return false, false
	}
	up := pollable(fd, "pmi-agent")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progDone {
		up.Close()
		return false, true // the program has ended: nothing to resume
	}
	if r.overflow {
		up.Close()
		fmt.Fprintf(os.Stderr, "cosched rank keeper: job %s rank %s sent more PMI commands since its last barrier than a keeper replays\n", r.job, r.rank)
		return false, true
	}
	_ = up.SetDeadline(time.Now().Add(5 * time.Second))
	hello := fmt.Sprintf("cmd=cosched_resume job=%s rank=%s barriers=%d inited=%s finalized=%s\n", r.job, r.rank, r.barriers, bit(r.inited), bit(r.finalized))
	answer, err := writeRead(up, hello)
	if err != nil {
		up.Close()
		return false, false
	}
	epoch, refused := -1, ""
	for _, f := range strings.Fields(answer) {
		k, v, _ := strings.Cut(f, "=")
		switch {
		case k == "barriers":
			epoch, _ = strconv.Atoi(v)
		case k == "rc" && v != "0":
			refused = answer
		}
	}
	if refused != "" || epoch < 0 {
		up.Close() // not (yet) this rank's agent: the job may not be adopted yet
		return false, false
	}
	_ = up.SetDeadline(time.Time{})
	inBarrier := len(r.log) > 0 && bytes.HasPrefix(r.log[len(r.log)-1], []byte("cmd=barrier_in"))
	switch {
	case epoch == r.barriers:
		for _, l := range r.log {
			if _, err := up.Write(l); err != nil {
				up.Close()
				return false, false
			}
		}
		r.swallow = r.replied
	case epoch == r.barriers+1 && inBarrier:
		// The barrier ended before the old agent told the rank.
		r.barriers++
		r.log, r.logBytes, r.replied = nil, 0, 0
		_, _ = r.prog.Write([]byte("cmd=barrier_out rc=0\n"))
	default:
		up.Close()
		fmt.Fprintf(os.Stderr, "cosched rank keeper: job %s rank %s has seen %d PMI barriers, its agent %d: cannot resume\n", r.job, r.rank, r.barriers, epoch)
		return false, true
	}
	r.up = up
	return true, false
}

// writeRead writes a line and reads the answer's line byte by byte, so
// that nothing after it is taken from the connection.
func writeRead(f *os.File, line string) (string, error) {
	if _, err := f.Write([]byte(line)); err != nil {
		return "", err
	}
	var b [1]byte
	var out []byte
	for len(out) < 4096 {
		if _, err := f.Read(b[:]); err != nil {
			return "", err
		}
		if b[0] == '\n' {
			return string(out), nil
		}
		out = append(out, b[0])
	}
	return "", errors.New("answer too long")
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
