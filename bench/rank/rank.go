package rank

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/comm"
)

// Comm is the part of *comm.Comm that a benchmark rank uses.
type Comm interface {
	Rank() int
	Size() int
	Send(ctx context.Context, dst, tag int, data []byte) error
	Recv(ctx context.Context, src, tag int) (comm.Message, error)
	Isend(dst, tag int, data []byte) (*comm.Request, error)
	Irecv(src, tag int) (*comm.Request, error)
	Waitall(ctx context.Context, rs []*comm.Request) ([]comm.Message, error)
	Barrier(ctx context.Context) error
}

var _ Comm = (*comm.Comm)(nil)

// HeaderSize is the number of leading bytes of every message that identify
// it: iteration (8), sender (4) and step (4), little-endian. Messages are
// at least this long.
const HeaderSize = 16

// Config is one rank's run.
type Config struct {
	Template   bench.Template
	Iterations int    // at least 1
	Seed       uint64 // keys the compute draws (bench.Draw)
	Work       Work   // what a compute phase does: CPU (the zero value) or Wall
	// MessageSize is the size of every message in bytes, HeaderSize …
	// comm.MaxMessage; 0 means bench.DefaultMessageSize.
	MessageSize int
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if err := c.Template.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("template: %w", err))
	}
	if c.Iterations < 1 {
		errs = append(errs, fmt.Errorf("iterations %d: must be at least 1", c.Iterations))
	}
	if c.Work != CPU && c.Work != Wall {
		errs = append(errs, fmt.Errorf("work %d: want CPU or Wall", int(c.Work)))
	}
	if c.MessageSize != 0 && (c.MessageSize < HeaderSize || c.MessageSize > comm.MaxMessage) {
		errs = append(errs, fmt.Errorf("message size %d: must be between %d and %d bytes (or 0 for %d)", c.MessageSize, HeaderSize, comm.MaxMessage, bench.DefaultMessageSize))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench rank: %w", err)
	}
	return nil
}

func (c Config) messageSize() int {
	if c.MessageSize == 0 {
		return bench.DefaultMessageSize
	}
	return c.MessageSize
}

// Run executes the rank's iterations over c (see the package comment) and
// returns its statistics. On an error the statistics cover the iterations
// completed before it.
func Run(ctx context.Context, c Comm, cfg Config) (comm.Stats, error) {
	return run(ctx, c, cfg, cfg.Work.phase())
}

// computeFunc carries out one compute phase of d.
type computeFunc func(ctx context.Context, d time.Duration) error

func run(ctx context.Context, c Comm, cfg Config, compute computeFunc) (st comm.Stats, err error) {
	if err := cfg.Validate(); err != nil {
		return st, err
	}
	me, size := c.Rank(), c.Size()
	if size < 1 || me < 0 || me >= size {
		return st, fmt.Errorf("bench rank: rank %d of %d: not a rank of the job", me, size)
	}
	x := exchanger{c: c, me: me, size: cfg.messageSize(), t: cfg.Template}
	if cfg.Template.Pattern != bench.Barrier {
		x.steps = bench.Steps(cfg.Template.Pattern, me, size)
	}
	if len(x.steps) > 0 {
		x.buf = make([]byte, x.size)
	}
	if cfg.Template.Sync == bench.NonBlocking {
		x.reqs = make([]*comm.Request, 0, 2*len(x.steps))
	}

	start := time.Now()
	defer func() { st.Wall = int64(time.Since(start)) }() // st is the named result
	for i := range cfg.Iterations {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("bench rank %d: iteration %d: %w", me, i, err)
		}
		d := cfg.Template.Compute(cfg.Seed, me, i)
		if err := compute(ctx, d); err != nil {
			return st, fmt.Errorf("bench rank %d: iteration %d: compute: %w", me, i, err)
		}
		st.Compute += int64(d)
		t0 := time.Now()
		err := x.iteration(ctx, i)
		st.CommWait += int64(time.Since(t0))
		if err != nil {
			return st, fmt.Errorf("bench rank %d: iteration %d: %w", me, i, err)
		}
		st.Iterations++
	}
	return st, nil
}

// exchanger carries out one rank's communication phases.
type exchanger struct {
	c     Comm
	me    int
	size  int // bytes per message
	t     bench.Template
	steps []bench.Step
	buf   []byte          // every message: comm's sends are buffered, data may be reused at once
	reqs  []*comm.Request // NB: receives, then sends
}

func (x *exchanger) iteration(ctx context.Context, i int) error {
	switch {
	case x.t.Pattern == bench.Barrier:
		if err := x.c.Barrier(ctx); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
		return nil
	case x.t.Sync == bench.Blocking:
		return x.blocking(ctx, i)
	default:
		return x.nonBlocking(ctx, i)
	}
}

func (x *exchanger) blocking(ctx context.Context, i int) error {
	for s, st := range x.steps {
		if err := x.c.Send(ctx, st.To, i, x.message(i, s)); err != nil {
			return fmt.Errorf("step %d: send to rank %d: %w", s, st.To, err)
		}
		m, err := x.c.Recv(ctx, st.From, i)
		if err != nil {
			return fmt.Errorf("step %d: receive from rank %d: %w", s, st.From, err)
		}
		if err := x.check(m, i, s); err != nil {
			return err
		}
	}
	return nil
}

func (x *exchanger) nonBlocking(ctx context.Context, i int) error {
	x.reqs = x.reqs[:0]
	for s, st := range x.steps {
		r, err := x.c.Irecv(st.From, i)
		if err != nil {
			return fmt.Errorf("step %d: post receive from rank %d: %w", s, st.From, err)
		}
		x.reqs = append(x.reqs, r)
	}
	for s, st := range x.steps {
		r, err := x.c.Isend(st.To, i, x.message(i, s))
		if err != nil {
			return fmt.Errorf("step %d: send to rank %d: %w", s, st.To, err)
		}
		x.reqs = append(x.reqs, r)
	}
	if err := x.c.Barrier(ctx); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if len(x.reqs) == 0 {
		return nil
	}
	ms, err := x.c.Waitall(ctx, x.reqs)
	if err != nil {
		return fmt.Errorf("waiting for %d messages: %w", len(x.steps), err)
	}
	if len(ms) != len(x.reqs) {
		return fmt.Errorf("waiting for %d requests: got %d results", len(x.reqs), len(ms))
	}
	for s := range x.steps {
		if err := x.check(ms[s], i, s); err != nil {
			return err
		}
	}
	return nil
}

// message returns the message of iteration i, step s.
func (x *exchanger) message(i, s int) []byte {
	b := x.buf
	binary.LittleEndian.PutUint64(b[0:8], uint64(i))
	binary.LittleEndian.PutUint32(b[8:12], uint32(x.me))
	binary.LittleEndian.PutUint32(b[12:16], uint32(s))
	return b
}

// check verifies that m is the message of iteration i, step s: sent by the
// step's From with tag i, of the configured size, with the matching header.
func (x *exchanger) check(m comm.Message, i, s int) error {
	from := x.steps[s].From
	var bad []string
	if m.Source != from {
		bad = append(bad, fmt.Sprintf("source rank %d", m.Source))
	}
	if m.Tag != i {
		bad = append(bad, fmt.Sprintf("tag %d", m.Tag))
	}
	if len(m.Data) != x.size {
		bad = append(bad, fmt.Sprintf("%d bytes instead of %d", len(m.Data), x.size))
	}
	if len(m.Data) >= HeaderSize {
		it := binary.LittleEndian.Uint64(m.Data[0:8])
		sender := binary.LittleEndian.Uint32(m.Data[8:12])
		step := binary.LittleEndian.Uint32(m.Data[12:16])
		if it != uint64(i) || sender != uint32(from) || step != uint32(s) {
			bad = append(bad, fmt.Sprintf("header says iteration %d, rank %d, step %d", it, sender, step))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("step %d: wrong message where rank %d's of iteration %d, step %d was due: %s", s, from, i, s, strings.Join(bad, "; "))
	}
	return nil
}

// ConfigOf is the configuration of a rank of the benchmark job j (the
// default message size).
func ConfigOf(j bench.Job) (Config, error) {
	if err := j.Validate(); err != nil {
		return Config{}, err
	}
	w, err := ParseWork(cmp.Or(j.Work, "cpu"))
	if err != nil {
		return Config{}, err
	}
	return Config{Template: j.Template, Iterations: j.Iterations, Seed: j.Seed, Work: w}, nil
}
