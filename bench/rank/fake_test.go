package rank

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cosched/cosched/comm"
)

// world is an in-memory job: it routes messages by (source, destination,
// tag), first in first out, and implements a barrier. Every rank's calls
// are logged.
type world struct {
	size int
	// corrupt, if set, may change a message as it is sent.
	corrupt func(src, dst, tag int, data []byte) []byte

	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) whenever something changes
	boxes   map[route][][]byte
	arrived int    // ranks at the current barrier
	gen     uint64 // barriers completed
}

type route struct{ src, dst, tag int }

func newWorld(size int) *world {
	return &world{size: size, changed: make(chan struct{}), boxes: map[route][][]byte{}}
}

// broadcast wakes every waiter; w.mu must be held.
func (w *world) broadcast() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// await calls try under the lock until it reports success, or ctx is done.
func (w *world) await(ctx context.Context, try func() bool) error {
	for {
		w.mu.Lock()
		if try() {
			w.mu.Unlock()
			return nil
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *world) put(src, dst, tag int, data []byte) {
	b := append([]byte(nil), data...) // sends are buffered: the caller may reuse data
	if w.corrupt != nil {
		b = w.corrupt(src, dst, tag, b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	k := route{src, dst, tag}
	w.boxes[k] = append(w.boxes[k], b)
	w.broadcast()
}

func (w *world) take(ctx context.Context, src, dst, tag int) (comm.Message, error) {
	var m comm.Message
	err := w.await(ctx, func() bool {
		k := route{src, dst, tag}
		q := w.boxes[k]
		if len(q) == 0 {
			return false
		}
		m = comm.Message{Source: src, Tag: tag, Data: q[0]}
		if len(q) == 1 {
			delete(w.boxes, k)
		} else {
			w.boxes[k] = q[1:]
		}
		return true
	})
	return m, err
}

func (w *world) barrier(ctx context.Context) error {
	w.mu.Lock()
	gen := w.gen
	w.arrived++
	if w.arrived == w.size {
		w.arrived = 0
		w.gen++
		w.broadcast()
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	return w.await(ctx, func() bool { return w.gen != gen })
}

// undelivered counts the messages nobody received.
func (w *world) undelivered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, q := range w.boxes {
		n += len(q)
	}
	return n
}

// call is one logged call of a rank.
type call struct {
	op   string // send, recv, isend, irecv, barrier, waitall
	peer int    // destination (send, isend) or source (recv, irecv)
	tag  int
	size int // bytes sent or received; requests waited for (waitall)
}

func (c call) String() string {
	return fmt.Sprintf("%s(peer %d, tag %d, size %d)", c.op, c.peer, c.tag, c.size)
}

// fakeComm is one rank's view of a world. It is used by one goroutine.
type fakeComm struct {
	w    *world
	rank int
	log  []call
	reqs map[*comm.Request]fakeReq // pending requests
}

type fakeReq struct {
	send     bool
	src, tag int
}

var _ Comm = (*fakeComm)(nil)

func (w *world) comm(rank int) *fakeComm {
	return &fakeComm{w: w, rank: rank, reqs: map[*comm.Request]fakeReq{}}
}

func (f *fakeComm) Rank() int { return f.rank }
func (f *fakeComm) Size() int { return f.w.size }

func (f *fakeComm) checkPeer(peer, tag int) error {
	if peer < 0 || peer >= f.w.size {
		return fmt.Errorf("fake: rank %d out of range", peer)
	}
	if tag < 0 {
		return fmt.Errorf("fake: tag %d < 0", tag)
	}
	return nil
}

func (f *fakeComm) Send(ctx context.Context, dst, tag int, data []byte) error {
	f.log = append(f.log, call{"send", dst, tag, len(data)})
	if err := f.checkPeer(dst, tag); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.w.put(f.rank, dst, tag, data)
	return nil
}

func (f *fakeComm) Recv(ctx context.Context, src, tag int) (comm.Message, error) {
	if err := f.checkPeer(src, tag); err != nil {
		return comm.Message{}, err
	}
	m, err := f.w.take(ctx, src, f.rank, tag)
	f.log = append(f.log, call{"recv", src, tag, len(m.Data)})
	return m, err
}

func (f *fakeComm) Isend(dst, tag int, data []byte) (*comm.Request, error) {
	f.log = append(f.log, call{"isend", dst, tag, len(data)})
	if err := f.checkPeer(dst, tag); err != nil {
		return nil, err
	}
	f.w.put(f.rank, dst, tag, data)
	r := &comm.Request{}
	f.reqs[r] = fakeReq{send: true}
	return r, nil
}

func (f *fakeComm) Irecv(src, tag int) (*comm.Request, error) {
	f.log = append(f.log, call{"irecv", src, tag, 0})
	if err := f.checkPeer(src, tag); err != nil {
		return nil, err
	}
	r := &comm.Request{}
	f.reqs[r] = fakeReq{src: src, tag: tag}
	return r, nil
}

// Waitall completes the requests in order; receives posted earlier are
// matched first, as in comm (messages from one source with one tag are
// received in the order they were sent).
func (f *fakeComm) Waitall(ctx context.Context, rs []*comm.Request) ([]comm.Message, error) {
	f.log = append(f.log, call{"waitall", -1, -1, len(rs)})
	ms := make([]comm.Message, len(rs))
	for i, r := range rs {
		q, ok := f.reqs[r]
		if !ok {
			return nil, errors.New("fake: unknown or completed request")
		}
		if !q.send {
			m, err := f.w.take(ctx, q.src, f.rank, q.tag)
			if err != nil {
				return nil, err
			}
			ms[i] = m
		}
		delete(f.reqs, r)
	}
	return ms, nil
}

func (f *fakeComm) Barrier(ctx context.Context) error {
	f.log = append(f.log, call{"barrier", -1, -1, 0})
	return f.w.barrier(ctx)
}
