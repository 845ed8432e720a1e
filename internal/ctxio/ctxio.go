// Package ctxio makes streaming readers and writers stop when a context is
// cancelled: every Read or Write first checks the context, so a loop that
// only reads its input or writes its output (a generator writing a million
// lines, a fit reading a large trace) stops within one call of a signal,
// without a cancellation check of its own.
package ctxio

import (
	"context"
	"io"
)

// Reader returns r, failing with the context's cause once ctx is done.
func Reader(ctx context.Context, r io.Reader) io.Reader { return &reader{ctx.Done(), ctx, r} }

// Writer returns w, failing with the context's cause once ctx is done.
func Writer(ctx context.Context, w io.Writer) io.Writer { return &writer{ctx.Done(), ctx, w} }

// Interruptible returns r for a source whose Read may block indefinitely
// (a terminal, a pipe nobody writes to): each Read runs in a goroutine and
// returns the context's cause as soon as ctx is done, without waiting for
// it. The abandoned Read reads into its own buffer and ends when its source
// does (at the latest when the process exits); r must not be read by anyone
// else afterwards.
func Interruptible(ctx context.Context, r io.Reader) io.Reader {
	return &interruptible{ctx: ctx, r: r}
}

type interruptible struct {
	ctx     context.Context
	r       io.Reader
	pending chan readResult // a Read still under way after a cancellation
}

type readResult struct {
	buf []byte
	err error
}

func (c *interruptible) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	if c.pending != nil {
		return 0, context.Cause(c.ctx)
	}
	done := make(chan readResult, 1)
	go func() {
		buf := make([]byte, len(p))
		n, err := c.r.Read(buf)
		done <- readResult{buf[:n], err}
	}()
	select {
	case res := <-done:
		return copy(p, res.buf), res.err
	case <-c.ctx.Done():
		c.pending = done
		return 0, context.Cause(c.ctx)
	}
}

type reader struct {
	done <-chan struct{}
	ctx  context.Context // only for its cause, once done
	r    io.Reader
}

func (c *reader) Read(p []byte) (int, error) {
	select {
	case <-c.done:
		return 0, context.Cause(c.ctx)
	default:
		return c.r.Read(p)
	}
}

type writer struct {
	done <-chan struct{}
	ctx  context.Context
	w    io.Writer
}

func (c *writer) Write(p []byte) (int, error) {
	select {
	case <-c.done:
		return 0, context.Cause(c.ctx)
	default:
		return c.w.Write(p)
	}
}
