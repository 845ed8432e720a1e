package pmi

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// A rank whose agent keeps it across restarts talks PMI through its
// keeper (node/rank/shim), which holds the rank's socket and relays its
// lines to the agent. When the agent dies, the keeper connects to the
// agent's next life (ServeResume) and says which rank it speaks for and
// how far the rank got:
//
//	keeper → agent: cmd=cosched_resume job=J rank=R barriers=K inited=0|1 finalized=0|1
//	agent → keeper: cmd=cosched_resume rc=0 barriers=E   (or rc=-1 msg=WHY)
//
// K is the number of barriers the rank has seen end, E the number the
// agent's job has (its Snapshot's Epoch). Then the connection carries the
// rank's PMI-1 commands as the one made at spawn did: the keeper sends
// again every command since the rank's last barrier (replaying its puts
// and barrier_in into the job's fresh state) and drops the replies the
// rank already had; if E = K+1 the barrier the rank is in ended before
// the restart, and the keeper answers barrier_out itself.

// ResumeCmd names the keeper's first line on a resumed connection.
const ResumeCmd = "cosched_resume"

// Authorize decides whether the peer of c (a keeper's connection) may
// speak for rank of job; a non-nil error refuses it with that reason.
type Authorize func(job int64, rank int, c net.Conn) error

// ServeResume accepts keepers' connections on ln until Close, which closes
// ln: each says which rank it speaks for (auth checks it), and is then
// served as that rank's PMI connection, in place of any it had.
func (s *Server) ServeResume(ln net.Listener, auth Authorize) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return errors.New("pmi: server closed")
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				s.log.Sugar().Debugf("pmi: resume accept: %v", err)
				time.Sleep(100 * time.Millisecond) // EMFILE and the like: do not spin
				continue
			}
			s.wg.Add(1) // the accept loop's own count is held: never from zero
			go func() {
				defer s.wg.Done()
				if err := s.resume(c, auth); err != nil {
					s.log.Sugar().Warnf("pmi: keeper's resume refused: %v", err)
					_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
					_, _ = c.Write(Encode(ResumeCmd, "rc", "-1", "msg", err.Error()))
					c.Close()
				}
			}()
		}
	}()
	return nil
}

// resume reads a keeper's hello and serves its connection; an error
// means it was refused (the caller answers and closes).
func (s *Server) resume(c net.Conn, auth Authorize) error {
	if err := c.SetReadDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	line, err := readHello(c)
	if err != nil {
		return err
	}
	cmd, err := Parse(line)
	if err != nil {
		return fmt.Errorf("hello %q: %w", truncate(line), err)
	}
	if cmd.Name != ResumeCmd {
		return fmt.Errorf("hello: command %q, want %s", truncate([]byte(cmd.Name)), ResumeCmd)
	}
	job, err1 := strconv.ParseInt(cmd.Args["job"], 10, 64)
	rank, err2 := strconv.Atoi(cmd.Args["rank"])
	_, err3 := strconv.ParseUint(cmd.Args["barriers"], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("hello %q: %w", truncate(line), err)
	}
	if err := auth(job, rank, c); err != nil {
		return err
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	rc := &rankConn{rank: rank, conn: c, inited: cmd.Args["inited"] == "1", finalized: cmd.Args["finalized"] == "1"}
	s.mu.Lock()
	js := s.jobs[job]
	switch {
	case s.closed:
		err = errors.New("server closed")
	case js == nil:
		err = fmt.Errorf("job %d is not served here", job)
	case js.pmi.ranks[rank] == nil:
		err = fmt.Errorf("rank %d of job %d does not run here", rank, job)
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if old := js.conns[rank]; old != nil {
		old.conn.Close()
	}
	js.conns[rank] = rc
	js.pmi.ranks[rank].finalized = rc.finalized
	epoch := js.pmi.epoch
	s.mu.Unlock()
	s.log.Sugar().Infof("pmi: job %d rank %d resumed through its keeper at barrier %d", job, rank, epoch)
	if err := rc.write(Encode(ResumeCmd, "rc", "0", "barriers", strconv.FormatUint(epoch, 10))); err != nil {
		c.Close()
		return nil // the keeper went; it dials again
	}
	s.serve(js, rc)
	return nil
}

// readHello reads one line byte by byte, so that nothing after it is
// taken from the connection before serve reads it.
func readHello(c net.Conn) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < MaxLine {
		if _, err := c.Read(b); err != nil {
			return nil, fmt.Errorf("hello: %w", err)
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return nil, fmt.Errorf("hello longer than %d bytes", MaxLine)
}
