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
