package relay

import (
	"io"
	"sync"

	"github.com/cosched/cosched/internal/frame"
)

// writeQueue holds the frames for one connection, encoded straight into
// a buffer that its writer goroutine swaps out and writes whole: whoever
// produces a frame never waits for the socket, frames cost no allocation
// of their own, and a burst goes out in one system call. The two buffers
// are reused, so the memory written is warm.
type writeQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte // frames not yet taken by the writer
	spare  []byte // the buffer the writer gave back
	closed bool   // no more pushes; the writer drains what is left, then ends
}

// maxSpare is the largest buffer kept for reuse: one huge frame does not
// pin its memory.
const maxSpare = 4 << 20

func newWriteQueue() *writeQueue {
	q := &writeQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push encodes v as a frame of type t at the end of the queue. It
// returns false, and queues nothing, if the queue is closed or v does not
// encode (the error then says why).
func (q *writeQueue) push(t frame.Type, v any) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, nil
	}
	b, err := frame.Append(q.buf, t, v)
	if err != nil {
		return false, err
	}
	q.buf = b
	q.cond.Signal()
	return true, nil
}

// close stops further pushes; frames already queued are still written.
func (q *writeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// isClosed says whether close was called.
func (q *writeQueue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// take waits for frames and returns all of them, giving back done (the
// previous batch, written) for reuse; ok=false once the queue is closed
// and empty.
func (q *writeQueue) take(done []byte) (batch []byte, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cap(done) <= maxSpare {
		q.spare = done[:0]
	}
	for len(q.buf) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.buf) == 0 {
		return nil, false
	}
	batch, q.buf, q.spare = q.buf, q.spare, nil
	return batch, true
}

// drain writes everything pushed to q into w until q is closed and empty
// or a write fails.
func drain(q *writeQueue, w io.Writer) error {
	var done []byte
	for {
		batch, ok := q.take(done)
		if !ok {
			return nil
		}
		if _, err := w.Write(batch); err != nil {
			return err
		}
		done = batch
	}
}
