package pmix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// HelperName is the helper's file name in the agent's library directory.
const HelperName = "cosched-pmix"

// Frame types of the helper's protocol (server/cosched-pmix.c). Append
// only.
const (
	frameEnv       = 'E'
	frameReady     = 'R'
	frameFence     = 'F'
	frameAbort     = 'A'
	frameConnected = 'C'
	frameFinalized = 'X'
	frameLog       = 'L'
	frameFenceDone = 'D'
	framePing      = 'P' // agent → helper, answered with the same
)

// Bounds on what the helper may send, so a helper gone wrong cannot make
// the agent allocate without limit.
const (
	maxFrame     = 16 << 20
	startTimeout = 20 * time.Second
	writeTimeout = 5 * time.Second
)

// helperConfig is what one helper serves.
type helperConfig struct {
	path   string
	nspace string
	tmpDir string
	nodes  []string // node of each rank
	here   string
	cred   *syscall.Credential // nil: the agent's own user
	stderr *os.File            // the helper's stderr (nil: discarded)
}

// helperEvents receive what the helper reports, from its reader
// goroutine, one at a time, in the order the helper sent them.
type helperEvents struct {
	fence     func(data []byte)
	abort     func(rank, code int, msg string)
	connected func(rank int)
	finalized func(rank int)
	// ended is called once, last: the helper exited (why: its last
	// words, or how it ended).
	ended func(why string)
}

// helper is one running helper process.
type helper struct {
	cmd  *exec.Cmd
	in   *os.File // agent → helper
	wmu  sync.Mutex
	done chan struct{} // closed when the reader has returned
	smu  sync.Mutex    // one ping at a time
	pong chan struct{}
}

// startHelper runs the helper and waits until it has registered the
// job's local ranks: env holds each local rank's PMIx environment.
func startHelper(ctx context.Context, cfg helperConfig, ev helperEvents) (*helper, map[int][]string, error) {
	args := []string{cfg.nspace, cfg.tmpDir, "0", "0", cfg.here}
	if cfg.cred != nil {
		args[2], args[3] = strconv.FormatUint(uint64(cfg.cred.Uid), 10), strconv.FormatUint(uint64(cfg.cred.Gid), 10)
	} else {
		args[2], args[3] = strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	}
	args = append(args, cfg.nodes...)
	cmd := exec.Command(cfg.path, args...)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pmix helper: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, fmt.Errorf("pmix helper: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if cfg.stderr != nil {
		cmd.Stderr = cfg.stderr
	}
	// Its own process group (a signal to the agent's terminal is not
	// its), killed with the agent (Pdeathsig), as the job's user.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cfg.cred}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, fmt.Errorf("pmix helper %s: %w", cfg.path, err)
	}
	h := &helper{cmd: cmd, in: inW, done: make(chan struct{}), pong: make(chan struct{}, 1)}
	r := bufio.NewReader(outR)

	// Until ready, on this goroutine, bounded by startTimeout.
	env := map[int][]string{}
	ready := make(chan error, 1)
	go func() {
		for {
			t, body, err := readFrame(r)
			if err != nil {
				ready <- err
				return
			}
			switch t {
			case frameEnv:
				if len(body) < 4 {
					ready <- fmt.Errorf("a short environment frame")
					return
				}
				rank := int(binary.BigEndian.Uint32(body))
				var vars []string
				for _, v := range bytes.Split(bytes.TrimSuffix(body[4:], []byte{0}), []byte{0}) {
					if len(v) > 0 {
						vars = append(vars, string(v))
					}
				}
				env[rank] = vars
			case frameReady:
				ready <- nil
				return
			case frameLog:
				ready <- errors.New(string(body))
				return
			default:
				ready <- fmt.Errorf("frame %q before the ranks were registered", t)
				return
			}
		}
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("not ready after %v", startTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		// The start goroutine returns when its pipe closes (its one
		// result goes to the buffered channel).
		cmd.Process.Kill()
		outR.Close()
		inW.Close()
		if werr := cmd.Wait(); werr != nil {
			err = fmt.Errorf("%w (%v)", err, werr)
		}
		return nil, nil, fmt.Errorf("PMIx server %s did not start: %w", cfg.path, err)
	}
	go h.read(r, outR, ev)
	return h, env, nil
}

// read dispatches the helper's frames until it ends.
func (h *helper) read(r *bufio.Reader, f *os.File, ev helperEvents) {
	defer close(h.done)
	defer f.Close()
	last := ""
	for {
		t, body, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				last = cmpOr(last, err.Error())
			}
			break
		}
		switch t {
		case frameFence:
			ev.fence(body)
		case frameAbort:
			if len(body) < 8 {
				last = "a short abort frame"
				h.cmd.Process.Kill()
				continue
			}
			ev.abort(int(binary.BigEndian.Uint32(body)), int(int32(binary.BigEndian.Uint32(body[4:]))), string(body[8:]))
		case frameConnected, frameFinalized:
			if len(body) < 4 {
				continue
			}
			rank := int(binary.BigEndian.Uint32(body))
			if t == frameConnected {
				ev.connected(rank)
			} else {
				ev.finalized(rank)
			}
		case frameLog:
			last = string(body)
		case framePing:
			select {
			case h.pong <- struct{}{}:
			default:
			}
		}
	}
	err := h.cmd.Wait()
	why := last
	if why == "" && err != nil {
		why = err.Error()
	} else if why == "" {
		why = "exited"
	}
	ev.ended(why)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("a frame of %d bytes from the PMIx helper", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("PMIx helper frame cut short: %w", err)
	}
	return hdr[0], body, nil
}

// sync returns once the helper has answered a ping (everything it sent
// before has been dispatched), or it ended, or after timeout.
func (h *helper) sync(timeout time.Duration) {
	h.smu.Lock()
	defer h.smu.Unlock()
	select {
	case <-h.pong: // a stale answer
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	if h.write(framePing, nil) != nil {
		// Its pipe is closed: the helper is gone. Its reader says so
		// (ended) before done, and a rank's end its death caused must
		// carry that reason, not race it.
		select {
		case <-h.done:
		case <-t.C:
		}
		return
	}
	select {
	case <-h.pong:
	case <-h.done:
	case <-t.C:
	}
}

func (h *helper) write(t byte, body []byte) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	buf := make([]byte, 5, 5+len(body))
	buf[0] = t
	binary.BigEndian.PutUint32(buf[1:], uint32(len(body)))
	buf = append(buf, body...)
	h.in.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := h.in.Write(buf)
	return err
}

// fenceDone ends the fence the helper is in with every node's data.
func (h *helper) fenceDone(status int32, data []byte) error {
	body := make([]byte, 4, 4+len(data))
	binary.BigEndian.PutUint32(body, uint32(status))
	return h.write(frameFenceDone, append(body, data...))
}

// stop asks the helper to finalize (its stdin closes) and waits for it,
// killing it after grace. Idempotent.
func (h *helper) stop(grace time.Duration) {
	h.wmu.Lock()
	h.in.Close()
	h.wmu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-h.done:
	case <-t.C:
		h.cmd.Process.Kill()
		<-h.done
	}
}
