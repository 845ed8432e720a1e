package relay

import (
	"bufio"
	"io"
	"sync"
)

// writeQueue is an unbounded queue of encoded frames for one connection,
// drained by that connection's writer goroutine: whoever produces a frame
// never waits for the socket.
type writeQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	bufs   [][]byte
	closed bool // no more pushes; the writer drains what is left, then ends
}

func newWriteQueue() *writeQueue {
	q := &writeQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues b; false if the queue is closed.
func (q *writeQueue) push(b []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.bufs = append(q.bufs, b)
	q.cond.Signal()
	return true
}

// close stops further pushes; frames already queued are still written.
func (q *writeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// take waits for frames and returns all of them (reusing spare's storage),
// or ok=false once the queue is closed and empty.
func (q *writeQueue) take(spare [][]byte) (bufs [][]byte, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.bufs) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.bufs) == 0 {
		return nil, false
	}
	bufs, q.bufs = q.bufs, spare[:0]
	return bufs, true
}

// drain writes everything pushed to q into w, flushing whenever the queue
// runs dry (so a burst goes out in few system calls), until q is closed
// and empty or a write fails.
func drain(q *writeQueue, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var spare [][]byte
	for {
		bufs, ok := q.take(spare)
		if !ok {
			return bw.Flush()
		}
		for i, b := range bufs {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			bufs[i] = nil
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		spare = bufs
	}
}
