package relay

import (
	"bufio"
	"io"
	"net"
	"sync"

	"github.com/cosched/cosched/internal/frame"
)

// writeQueue holds the frames for one connection, encoded straight into
// a buffer that its writer goroutine swaps out and writes whole: whoever
// produces a frame never waits for the socket, frames cost no allocation
// of their own, and a burst goes out in one system call. The two buffers
// are reused, so the memory written is warm. A large payload the relay
// owns (pushRef) is not copied at all: the writer sends it from where it
// lies, between the encoded bytes around it (writev).
type writeQueue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	buf        []byte       // frames not yet taken by the writer
	tails      []frame.Tail // payloads that go in buf, at their offsets
	spare      []byte       // the buffer the writer gave back
	spareTails []frame.Tail
	split      frame.Splitter
	closed     bool // no more pushes; the writer drains what is left, then ends
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
	return q.enqueue(t, v, false)
}

// pushRef is push for a v whose payload (frame.PutBytes) is the relay's
// own and never changes: the queue refers to it instead of copying it.
func (q *writeQueue) pushRef(t frame.Type, v any) (bool, error) {
	return q.enqueue(t, v, true)
}

func (q *writeQueue) enqueue(t frame.Type, v any, ref bool) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, nil
	}
	var b, tail []byte
	var err error
	if ref {
		b, tail, err = q.split.Append(q.buf, t, v)
	} else {
		b, err = frame.Append(q.buf, t, v)
	}
	if err != nil {
		return false, err
	}
	q.buf = b
	if tail != nil {
		q.tails = append(q.tails, frame.Tail{At: len(b), Data: tail})
	}
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

// take waits for frames and returns all of them, giving back done and
// doneTails (the previous batch, written) for reuse; ok=false once the
// queue is closed and empty.
func (q *writeQueue) take(done []byte, doneTails []frame.Tail) (batch []byte, tails []frame.Tail, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cap(done) <= maxSpare {
		q.spare = done[:0]
	}
	clear(doneTails) // the payloads are written: let them go
	q.spareTails = doneTails[:0]
	for len(q.buf) == 0 && len(q.tails) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.buf) == 0 && len(q.tails) == 0 {
		return nil, nil, false
	}
	batch, q.buf, q.spare = q.buf, q.spare, nil
	tails, q.tails, q.spareTails = q.tails, q.spareTails, nil
	return batch, tails, true
}

// drain writes everything pushed to q into c until q is closed and empty
// or a write fails. A c that buffers (a TLS link's, see sealedWriter) is
// flushed after each batch.
func drain(q *writeQueue, c io.Writer) error {
	flusher, _ := c.(interface{ Flush() error })
	var done []byte
	var doneTails []frame.Tail
	var iov [][]byte
	for {
		batch, tails, ok := q.take(done, doneTails)
		if !ok {
			return nil
		}
		var err error
		if len(tails) == 0 {
			_, err = c.Write(batch)
		} else {
			iov = frame.Gather(iov[:0], batch, tails)
			vs := net.Buffers(iov)
			_, err = vs.WriteTo(c)
			clear(iov)
		}
		if err == nil && flusher != nil {
			err = flusher.Flush()
		}
		if err != nil {
			return err
		}
		done, doneTails = batch, tails
	}
}

// sealedWriter gathers a batch's pieces (frame headers, payloads written
// from where they lie) into TLS records of up to 16 KiB: written one by
// one, each small header would be a record (and a seal) of its own.
func sealedWriter(c net.Conn) *bufio.Writer { return bufio.NewWriterSize(c, 16<<10) }
