package comm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cosched/cosched/internal/frame"
)

// ErrFinalized is returned by every call after Finalize.
var ErrFinalized = errors.New("comm: finalized")

// Environment variables Init reads. The rank manager (node/rank) sets the
// job, rank and size; the agent sets the relay's path.
const (
	envRelay = "COSCHED_RELAY"
	envJob   = "COSCHED_JOB"
	envRank  = "COSCHED_RANK"
	envSize  = "COSCHED_SIZE"
	envGrace = "COSCHED_RELAY_GRACE"
)

// Config says which relay to talk to and who this rank is; Init reads it
// from the environment.
type Config struct {
	Relay string // Unix socket path of the agent's relay (COSCHED_RELAY)
	Job   int64  // COSCHED_JOB
	Rank  int    // COSCHED_RANK
	Size  int    // COSCHED_SIZE
	// Grace, when positive, is how long the rank waits for its relay to
	// come back when the connection breaks (its agent keeps its ranks
	// and restarts: COSCHED_RELAY_GRACE, a Go duration); it then numbers
	// its messages and keeps each until it is delivered (resume.go).
	Grace time.Duration
}

func (cfg Config) validate() error {
	switch {
	case cfg.Relay == "":
		return errors.New("no relay socket path")
	case cfg.Size < 1:
		return fmt.Errorf("size %d, want ≥ 1", cfg.Size)
	case cfg.Rank < 0 || cfg.Rank >= cfg.Size:
		return fmt.Errorf("rank %d outside [0, %d)", cfg.Rank, cfg.Size)
	}
	return nil
}

// Message is a received message.
type Message struct {
	Source int
	Tag    int
	Data   []byte
}

// Request is a pending non-blocking operation.
type Request struct {
	id   uint64 // a receive's identifier on the connection; 0 for a send
	c    *Comm
	src  int           // as posted (may be AnySource), to check the Deliver
	tag  int           // as posted (may be AnyTag)
	ctxt int           // as posted: a resumed connection posts it again
	done chan struct{} // closed by the reader once msg is set; nil for a send
	msg  Message
}

func (r *Request) complete() bool { return r.done == nil || isClosed(r.done) }

// Comm is one rank's connection to its relay.
type Comm struct {
	cfg  Config
	conn net.Conn

	// wmu serializes frames on the connection. It is taken before mu, and
	// sequence numbers (request ids, barriers, collectives) are assigned
	// under it so that they reach the relay in order.
	wmu   sync.Mutex
	wbuf  []byte // frames being written, reused (guarded by wmu)
	split frame.Splitter
	tails []frame.Tail // payloads written from where they are, after wbuf's pieces
	iov   [][]byte

	mu        sync.Mutex
	err       error         // why calls fail (ErrFinalized, Fatal, connection lost); nil while usable
	dead      chan struct{} // closed when err is set: wakes every blocked call
	finalized bool          // Finalize was called
	lastReq   uint64
	pending   map[uint64]*Request // posted receives not yet delivered
	barrier   uint64              // last barrier arrived at
	released  chan struct{}       // closed on barrier's Release; nil before the first barrier
	coll      int                 // last collective sequence number (the tag) used
	// numbered: messages carry numbers and are kept until acknowledged
	// (resume.go); set at the Welcome, before any Send.
	numbered bool
	sent     map[int]*sentLog // by destination
	got      map[int]*gotLog  // by source
	closing  bool             // the Comm closed the connection itself: no resuming

	// Closed by the reader goroutine only.
	welcome    chan struct{}
	bye        chan struct{}
	readerDone chan struct{}
	readErr    error // why the reader stopped; read only after readerDone
}

// Init connects to the relay named by the environment.
func Init(ctx context.Context) (*Comm, error) {
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return Dial(ctx, cfg)
}

func configFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	cfg.Relay = getenv(envRelay)
	if cfg.Relay == "" {
		return cfg, fmt.Errorf("comm: %s is not set (not started by a cosched agent?)", envRelay)
	}
	num := func(name string, bits int) (int64, error) {
		s := getenv(name)
		if s == "" {
			return 0, fmt.Errorf("comm: %s is not set (not started by a cosched agent?)", name)
		}
		v, err := strconv.ParseInt(s, 10, bits)
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("comm: %s=%q is out of range", name, s)
		} else if err != nil {
			return 0, fmt.Errorf("comm: %s=%q is not an integer", name, s)
		}
		return v, nil
	}
	job, err := num(envJob, 64)
	if err != nil {
		return cfg, err
	}
	rank, err := num(envRank, strconv.IntSize)
	if err != nil {
		return cfg, err
	}
	size, err := num(envSize, strconv.IntSize)
	if err != nil {
		return cfg, err
	}
	cfg.Job, cfg.Rank, cfg.Size = job, int(rank), int(size)
	if g := getenv(envGrace); g != "" {
		d, err := time.ParseDuration(g)
		if err != nil || d < 0 {
			return cfg, fmt.Errorf("comm: %s=%q is not a duration ≥ 0 (like 5m)", envGrace, g)
		}
		cfg.Grace = d
	}
	if cfg.Size < 1 {
		return cfg, fmt.Errorf("comm: %s=%q, want ≥ 1", envSize, getenv(envSize))
	}
	if cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return cfg, fmt.Errorf("comm: %s=%q outside [0, %s=%d)", envRank, getenv(envRank), envSize, cfg.Size)
	}
	return cfg, nil
}

// Dial connects with an explicit configuration.
func Dial(ctx context.Context, cfg Config) (*Comm, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("comm: dial: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", cfg.Relay)
	if err != nil {
		return nil, fmt.Errorf("comm: dial relay %s: %w", cfg.Relay, err)
	}
	c := newComm(conn, cfg)
	if err := c.handshake(ctx); err != nil {
		return nil, fmt.Errorf("comm: rank %d of job %d: relay %s: %w", cfg.Rank, cfg.Job, cfg.Relay, err)
	}
	return c, nil
}

// newComm starts the reader on conn; the caller runs the handshake.
func newComm(conn net.Conn, cfg Config) *Comm {
	c := &Comm{
		cfg:        cfg,
		conn:       conn,
		dead:       make(chan struct{}),
		pending:    make(map[uint64]*Request),
		sent:       make(map[int]*sentLog),
		got:        make(map[int]*gotLog),
		welcome:    make(chan struct{}),
		bye:        make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	go c.read()
	return c
}

// handshake sends Hello and waits for Welcome. On failure the connection
// is closed and the reader has exited.
func (c *Comm) handshake(ctx context.Context) error {
	// Closing the connection when ctx ends unblocks both a stuck write and
	// the wait below.
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	err := c.emit(func() []out {
		return []out{{FrameHello, Hello{Job: c.cfg.Job, Rank: c.cfg.Rank, Size: c.cfg.Size, PID: os.Getpid(), Numbers: c.cfg.Grace > 0}}}
	})
	if err == nil {
		select {
		case <-c.welcome:
		case <-c.readerDone:
			err = c.readErr
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if !stop() && ctx.Err() != nil {
		err = ctx.Err() // whatever failed, it failed because ctx closed the connection
	}
	if err != nil {
		c.closeConn()
		<-c.readerDone
		return err
	}
	return nil
}

// closeConn closes the connection for good: the reader does not resume.
func (c *Comm) closeConn() {
	c.mu.Lock()
	c.closing = true
	conn := c.conn
	c.mu.Unlock()
	conn.Close()
}

// Rank is this rank's number.
func (c *Comm) Rank() int { return c.cfg.Rank }

// Size is the number of ranks of the job.
func (c *Comm) Size() int { return c.cfg.Size }

// Job is the job's id.
func (c *Comm) Job() int64 { return c.cfg.Job }

// Send sends data to dst with tag. It returns once the message is written
// to the relay; ctx is only checked before (a message is never half sent).
func (c *Comm) Send(ctx context.Context, dst, tag int, data []byte) error {
	err := ctx.Err()
	if err == nil {
		_, err = c.isend(dst, tag, ContextUser, data)
	}
	if err != nil {
		return c.opErr(fmt.Sprintf("send to %d", dst), err)
	}
	return nil
}

// Isend starts a send. The request is complete at once: the relay
// buffers the message.
func (c *Comm) Isend(dst, tag int, data []byte) (*Request, error) {
	r, err := c.isend(dst, tag, ContextUser, data)
	if err != nil {
		return nil, c.opErr(fmt.Sprintf("isend to %d", dst), err)
	}
	return r, nil
}

func (c *Comm) checkSend(dst, tag int, data []byte) error {
	switch {
	case dst < 0 || dst >= c.cfg.Size:
		return fmt.Errorf("destination %d outside [0, %d)", dst, c.cfg.Size)
	case tag < 0:
		return fmt.Errorf("tag %d, want ≥ 0", tag)
	case len(data) > MaxMessage:
		return fmt.Errorf("%d-byte message, limit %d (MaxMessage)", len(data), MaxMessage)
	}
	return nil
}

func (c *Comm) isend(dst, tag, ctxt int, data []byte) (*Request, error) {
	if err := c.checkSend(dst, tag, data); err != nil {
		return nil, err
	}
	err := c.emit(func() []out {
		c.mu.Lock()
		defer c.mu.Unlock()
		return []out{{FrameSend, c.numberLocked(Send{Dst: dst, Tag: tag, Context: ctxt, Data: data})}}
	})
	if err != nil {
		return nil, err
	}
	return &Request{c: c}, nil
}

// Recv receives a message from src (or AnySource) with tag (or AnyTag).
// When ctx ends first the receive stays posted: the next matching message
// goes to it, not to a later receive.
func (c *Comm) Recv(ctx context.Context, src, tag int) (Message, error) {
	op := func() string { return "recv from " + rankString(src) + " tag " + tagString(tag) }
	r, err := c.irecv(src, tag)
	if err != nil {
		return Message{}, c.opErr(op(), err)
	}
	if err := c.wait(ctx, []*Request{r}); err != nil {
		return Message{}, c.opErr(op(), err)
	}
	return r.msg, nil
}

// Irecv posts a receive.
func (c *Comm) Irecv(src, tag int) (*Request, error) {
	r, err := c.irecv(src, tag)
	if err != nil {
		return nil, c.opErr("irecv from "+rankString(src)+" tag "+tagString(tag), err)
	}
	return r, nil
}

func (c *Comm) irecv(src, tag int) (*Request, error) {
	switch {
	case src != AnySource && (src < 0 || src >= c.cfg.Size):
		return nil, fmt.Errorf("source %d outside [0, %d) and not AnySource", src, c.cfg.Size)
	case tag != AnyTag && tag < 0:
		return nil, fmt.Errorf("tag %d, want ≥ 0 or AnyTag", tag)
	}
	var r *Request
	err := c.emit(func() []out {
		c.mu.Lock()
		r = c.postLocked(src, tag, ContextUser)
		c.mu.Unlock()
		return []out{{FramePost, Post{Req: r.id, Src: src, Tag: tag, Context: ContextUser}}}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// postLocked registers a receive; it must be in pending before its Post
// is written, or the Deliver could arrive first.
func (c *Comm) postLocked(src, tag, ctxt int) *Request {
	c.lastReq++
	r := &Request{id: c.lastReq, c: c, src: src, tag: tag, ctxt: ctxt, done: make(chan struct{})}
	c.pending[r.id] = r
	return r
}

// Wait waits for one request. A completed request can be waited on again
// and returns the same message; a send request returns a zero Message.
func (c *Comm) Wait(ctx context.Context, r *Request) (Message, error) {
	if r == nil {
		return Message{}, errors.New("comm: wait: nil request")
	}
	if err := c.wait(ctx, []*Request{r}); err != nil {
		op := "wait"
		if r.done != nil {
			op = fmt.Sprintf("wait for receive from %s tag %s", rankString(r.src), tagString(r.tag))
		}
		return Message{}, c.opErr(op, err)
	}
	return r.msg, nil
}

// Waitall waits for every request. ms[i] is rs[i]'s message (a zero
// Message for a send). When ctx ends first no request is lost: each can
// be waited on again.
func (c *Comm) Waitall(ctx context.Context, rs []*Request) ([]Message, error) {
	for i, r := range rs {
		if r == nil {
			return nil, fmt.Errorf("comm: waitall: request %d is nil", i)
		}
	}
	if err := c.wait(ctx, rs); err != nil {
		return nil, c.opErr(fmt.Sprintf("waitall (%d requests)", len(rs)), err)
	}
	ms := make([]Message, len(rs))
	for i, r := range rs {
		ms[i] = r.msg
	}
	return ms, nil
}

// wait blocks until every request in rs is complete. If some are not, it
// first tells the relay (Wait) that the rank is blocked on them.
func (c *Comm) wait(ctx context.Context, rs []*Request) error {
	var ids []uint64
	seen := make(map[uint64]bool)
	for i, r := range rs {
		if r.c != c {
			return fmt.Errorf("request %d belongs to another Comm", i)
		}
		if !r.complete() && !seen[r.id] {
			seen[r.id] = true
			ids = append(ids, r.id)
		}
	}
	if err := c.state(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Requests delivered between the check above and this write are
	// ignored by the relay (proto.go).
	if err := c.emit(func() []out { return []out{{FrameWait, Wait{Reqs: ids}}} }); err != nil {
		return err
	}
	for _, r := range rs {
		if r.done == nil {
			continue
		}
		select {
		case <-r.done:
		case <-c.dead:
			return c.state()
		case <-ctx.Done():
			c.unwait(ids, 0)
			return ctx.Err()
		}
	}
	return nil
}

// unwait tells the relay the rank no longer waits (proto.go: Unwait) for
// those of reqs still incomplete, and for barrier's release.
func (c *Comm) unwait(reqs []uint64, barrier uint64) {
	var left []uint64
	c.mu.Lock()
	for _, id := range reqs {
		if _, ok := c.pending[id]; ok {
			left = append(left, id)
		}
	}
	c.mu.Unlock()
	if len(left) == 0 && barrier == 0 {
		return
	}
	// Best effort: if the connection has failed, nothing waits any more.
	_ = c.emit(func() []out { return []out{{FrameUnwait, Unwait{Reqs: left, Barrier: barrier}}} })
}

// ReportStats sends a benchmark rank's statistics to its agent.
func (c *Comm) ReportStats(s Stats) error {
	err := c.emit(func() []out { return []out{{FrameStats, s}} })
	return c.opErr("report stats", err)
}

// Finalize ends the rank's communication: it tells the relay, waits for
// its Bye (or ctx), closes the connection and waits for the reader. Blocked
// calls in other goroutines return ErrFinalized. It returns the reason if
// the connection had already failed; a second call returns ErrFinalized.
func (c *Comm) Finalize(ctx context.Context) error {
	// A relay that stops reading could block the Finalize write forever.
	stop := context.AfterFunc(ctx, c.closeConn)
	defer stop()

	c.wmu.Lock()
	c.mu.Lock()
	if c.finalized {
		c.mu.Unlock()
		c.wmu.Unlock()
		return ErrFinalized
	}
	c.finalized = true
	prev := c.err
	if prev == nil {
		close(c.dead)
	}
	c.err = ErrFinalized // also replacing a failure: "after Finalize every call returns ErrFinalized"
	c.mu.Unlock()
	var err error
	if prev == nil {
		// Under wmu, with err already set: no frame can follow Finalize.
		err = c.writeLocked([]out{{FrameFinalize, Finalize{}}})
		if err != nil && c.numbered && ctx.Err() == nil {
			// The relay is gone: the reader resumes the connection
			// and sends Finalize again; its Bye ends the wait below.
			c.conn.Close()
			err = nil
		}
	}
	c.wmu.Unlock()

	if prev == nil && err == nil {
		select {
		case <-c.bye:
		case <-c.readerDone:
			select {
			case <-c.bye:
			default:
				err = c.readErr
			}
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	c.closeConn()
	<-c.readerDone
	var fatal fatalError
	switch {
	case prev != nil:
		err = prev
	case err == nil:
	case errors.As(c.readErr, &fatal):
		err = fatal // the relay's reason, not the write error it caused
	case ctx.Err() != nil:
		err = ctx.Err() // the connection failed because ctx closed it
	}
	if err != nil {
		return fmt.Errorf("comm: finalize: %w", err)
	}
	return nil
}

// opErr adds the operation to err. ErrFinalized stays bare: "every call
// returns ErrFinalized".
func (c *Comm) opErr(op string, err error) error {
	if err == nil || err == ErrFinalized {
		return err
	}
	return fmt.Errorf("comm: %s: %w", op, err)
}

func rankString(r int) string {
	if r == AnySource {
		return "any"
	}
	return strconv.Itoa(r)
}

func tagString(t int) string {
	if t == AnyTag {
		return "any"
	}
	return strconv.Itoa(t)
}
