package comm

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
)

// Barrier waits for every rank of the job. It goes through the relay even
// for a single rank (the relay releases it at once).
//
// A rank is in at most one barrier at a time (the relay refuses a second
// Arrive before the Release): when ctx ends first the rank stays arrived,
// and the next Barrier call, or a concurrent one from another goroutine,
// first waits for that barrier's Release and then enters the next one.
func (c *Comm) Barrier(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return c.opErr("barrier", err)
		}
		c.mu.Lock()
		prev, prevSeq := c.released, c.barrier
		c.mu.Unlock()
		if prev != nil {
			select {
			case <-prev:
			case <-c.dead:
				return c.opErr(fmt.Sprintf("barrier %d", prevSeq), c.state())
			case <-ctx.Done():
				return c.opErr(fmt.Sprintf("barrier %d (waiting for the release of barrier %d)", prevSeq+1, prevSeq), ctx.Err())
			}
		}
		var seq uint64
		var ch chan struct{}
		err := c.emit(func() []out {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.released != prev {
				return nil // another goroutine entered the next barrier first
			}
			c.barrier++
			seq = c.barrier
			ch = make(chan struct{})
			c.released = ch // before Arrive is written: Release can follow at once
			return []out{{FrameArrive, Arrive{Seq: seq}}}
		})
		if err != nil {
			return c.opErr("barrier", err)
		}
		if ch == nil {
			continue
		}
		select {
		case <-ch:
			return nil
		case <-c.dead:
			return c.opErr(fmt.Sprintf("barrier %d", seq), c.state())
		case <-ctx.Done():
			c.unwait(nil, seq)
			return c.opErr(fmt.Sprintf("barrier %d", seq), ctx.Err())
		}
	}
}

// Alltoall sends in[j] to rank j and returns what every rank sent here:
// out[j] came from rank j (out[Rank()] is a copy of in[Rank()]).
func (c *Comm) Alltoall(ctx context.Context, in [][]byte) ([][]byte, error) {
	if len(in) != c.cfg.Size {
		return nil, fmt.Errorf("comm: alltoall: %d buffers for %d ranks", len(in), c.cfg.Size)
	}
	for j, b := range in {
		if len(b) > MaxMessage {
			return nil, fmt.Errorf("comm: alltoall: %d-byte buffer for rank %d, limit %d (MaxMessage)", len(b), j, MaxMessage)
		}
	}
	msgs, err := c.exchange(ctx, func(j int) []byte { return in[j] })
	if err != nil {
		return nil, c.opErr("alltoall", err)
	}
	out := make([][]byte, c.cfg.Size)
	for j := range out {
		out[j] = msgs[j].Data
	}
	out[c.cfg.Rank] = bytes.Clone(in[c.cfg.Rank])
	return out, nil
}

// Allreduce returns the sum of x over all ranks. Every rank adds the
// values in rank order 0, 1, …, Size−1, so every rank gets the same bits.
func (c *Comm) Allreduce(ctx context.Context, x float64) (float64, error) {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], math.Float64bits(x))
	msgs, err := c.exchange(ctx, func(int) []byte { return buf[:] })
	if err != nil {
		return 0, c.opErr("allreduce", err)
	}
	var sum float64
	for j, m := range msgs {
		v := x
		if j != c.cfg.Rank {
			if len(m.Data) != 8 {
				return 0, fmt.Errorf("comm: allreduce: rank %d sent %d bytes, want 8", j, len(m.Data))
			}
			v = math.Float64frombits(binary.BigEndian.Uint64(m.Data))
		}
		if j == 0 {
			sum = v // not 0+v, which would turn −0 into +0
		} else {
			sum += v
		}
	}
	return sum, nil
}

// exchange is the all-to-all under both collectives: it posts a receive
// from every other rank and sends data(j) to every other rank j, all in
// the collective context with this call's sequence number as the tag, and
// waits for the receives. msgs[j] came from rank j; msgs[Rank()] is zero.
//
// Every send is written before the wait, so a call abandoned through ctx
// never holds up the other ranks; its receives stay posted under a tag no
// later collective uses.
func (c *Comm) exchange(ctx context.Context, data func(j int) []byte) ([]Message, error) {
	if err := c.state(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, self := c.cfg.Size, c.cfg.Rank
	msgs := make([]Message, n)
	if n == 1 {
		return msgs, nil
	}
	reqs := make([]*Request, 0, n-1)
	err := c.emit(func() []out {
		fs := make([]out, 0, 2*(n-1))
		c.mu.Lock()
		c.coll++
		tag := c.coll
		for j := range n {
			if j != self {
				r := c.postLocked(j, tag, ContextCollective)
				reqs = append(reqs, r)
				fs = append(fs, out{FramePost, Post{Req: r.id, Src: j, Tag: tag, Context: ContextCollective}})
			}
		}
		// Receives first: the relay can then match the others' messages
		// on arrival instead of queueing them.
		for j := range n {
			if j != self {
				fs = append(fs, out{FrameSend, c.numberLocked(Send{Dst: j, Tag: tag, Context: ContextCollective, Data: data(j)})})
			}
		}
		c.mu.Unlock()
		return fs
	})
	if err != nil {
		return nil, err
	}
	if err := c.wait(ctx, reqs); err != nil {
		return nil, err
	}
	for _, r := range reqs {
		msgs[r.src] = r.msg
	}
	return msgs, nil
}
