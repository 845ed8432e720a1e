package relay

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/internal/frame"
)

// writeQueue holds the frames for one connection, encoded straight into
// a buffer that is written whole: whoever produces a frame never waits
// for the socket, frames cost no allocation of their own, and a burst
// goes out in one system call. The two buffers are reused, so the memory
// written is warm. A large payload the relay owns (payload.ref) is not
// copied at all: it is sent from where it lies, between the encoded
// bytes around it (writev).
//
// Two parties write a queue's connection, one at a time, so frames keep
// their order: its writer goroutine (drain), which may block, and the
// goroutine that produced the frames (direct writing, Relay.push), which
// claims an idle queue under the relay's lock and, once it has released
// that lock, writes what is queued without blocking (flush): a message
// then goes from the socket it was read from to the next one without a
// hand-off to another goroutine, and a payload passing through is not
// copied. What the socket does not take at once is left to the writer
// goroutine.
type writeQueue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	buf        []byte  // frames not yet taken by the writer
	tails      []qtail // payloads that go in buf, at their offsets
	spare      []byte  // a written buffer given back
	spareTails []qtail
	rest       []byte // a buffer for what a direct write left (flush)
	split      frame.Splitter
	closed     bool // no more pushes; the writer drains what is left, then ends

	// Direct writing. raw is the connection's descriptor (nil: only the
	// writer writes, as on a TLS link). writing: the writer goroutine
	// holds a batch; flushing: a flusher does. claimed: a producer will
	// flush (claimGen is the relay's critical section it claimed in).
	raw               syscall.RawConn
	writing, flushing bool
	claimed           bool
	claimGen          uint64
	broken            bool // a direct write failed: the writer sees to it
	// moved: the connection's peer went elsewhere (its relay restarted)
	// or closed it; the writer leaves the connection before writing to
	// it again (errPeerMoved).
	moved bool

	// Acknowledgements of numbered messages wait for the write of their
	// Deliver (a rank's queue): bytes in a socket's buffer survive the
	// relay's death, bytes in this queue do not. pushed counts the bytes
	// queued since the connection began, written those written;
	// acks[ackHead:] are due once written reaches their end (ascending).
	pushed, written uint64
	acks            []dueAck
	ackHead         int
}

// dueAck is the acknowledgement of message seq of rank src of job j to
// rank dst, due once its queue has written up to end, where its Deliver
// ends. seq 0: none.
type dueAck struct {
	end      uint64
	j        *job
	src, dst int
	seq      uint64
}

// qtail is a payload left out of a queue's buffer (frame.Tail). rd, if
// set, is the Reader whose chunk the payload is borrowed from, valid
// until its next Read: the flusher (that Reader's goroutine) copies what
// its direct write left of it.
type qtail struct {
	frame.Tail
	rd *frame.Reader
}

// payload says whose a frame's payload is: copied into the queue, the
// relay's own (referred to), or borrowed from a Reader's chunk (referred
// to if the Reader's goroutine writes it directly, which copies what it
// did not write before its next Read; copied if someone else writes it).
type payload struct {
	ref bool          // the relay's, never changes
	rd  *frame.Reader // borrowed from rd's chunk
}

// maxSpare is the largest buffer kept for reuse: one huge frame does not
// pin its memory.
const maxSpare = 4 << 20

// directMax bounds a direct write: a larger batch goes to the writer
// goroutine, which writes it while the reader reads on (on two
// processors, a 1 MiB message pipelined through the relay beats one
// written by the goroutine that read it).
const directMax = 64 << 10

// maxIov bounds the pieces of one direct write (IOV_MAX is 1024).
const maxIov = 1024

func newWriteQueue() *writeQueue {
	q := &writeQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push encodes v as a frame of type t at the end of the queue for the
// writer goroutine. It returns false, and queues nothing, if the queue is
// closed or v does not encode (the error then says why).
func (q *writeQueue) push(t frame.Type, v any) (bool, error) {
	ok, _, err := q.enqueue(t, v, payload{}, false, 0, dueAck{})
	return ok, err
}

// enqueue queues a frame. With direct, it claims the queue for the
// caller if no one writes it (claimed: the caller must flush it), in
// critical section gen of the relay, if the frame is at most directMax.
// A payload borrowed (pay.rd) whose frame the caller does not flush
// itself is copied. ack, if its seq is set, becomes due once the frame
// is written (takeDue).
func (q *writeQueue) enqueue(t frame.Type, v any, pay payload, direct bool, gen uint64, ack dueAck) (ok, claimed bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, false, nil
	}
	claim := direct && q.raw != nil && !q.broken && !q.writing && !q.flushing && !q.claimed
	mine := q.claimed && q.claimGen == gen && direct
	start := len(q.buf)
	var b, tail []byte
	if pay.ref || pay.rd != nil && (claim || mine) {
		b, tail, err = q.split.Append(q.buf, t, v)
	} else {
		b, err = frame.Append(q.buf, t, v) // a borrowed payload someone else writes: copied
	}
	if err != nil {
		return false, false, err
	}
	rd := pay.rd
	if claim && len(b)-start+len(tail) > directMax {
		// Large: its writer goroutine writes it, while this one reads on
		// (a direct write of it would serialise the two).
		claim = false
		if tail != nil && rd != nil {
			b, tail = append(b, tail...), nil
		}
	}
	q.buf = b
	if tail != nil {
		q.tails = append(q.tails, qtail{Tail: frame.Tail{At: len(b), Data: tail}, rd: rd})
	}
	q.pushed += uint64(len(b) - start + len(tail))
	if ack.seq != 0 {
		ack.end = q.pushed
		q.acks = append(q.acks, ack)
	}
	if claim {
		q.claimed, q.claimGen = true, gen
		return true, true, nil
	}
	if !q.claimed {
		q.cond.Signal()
	}
	return true, false, nil
}

// setRaw gives the queue the connection being written (nil: none), for
// direct writes.
func (q *writeQueue) setRaw(c net.Conn) {
	var raw syscall.RawConn
	if sc, ok := c.(syscall.Conn); ok {
		raw, _ = sc.SyscallConn()
	}
	q.mu.Lock()
	q.raw, q.broken = raw, false
	q.mu.Unlock()
}

// flush writes what is queued without blocking, for the producer that
// claimed the queue (enqueue), which must call it once it no longer
// holds the relay's lock; what the socket does not take is left to the
// writer goroutine (a borrowed payload's rest copied). due: the write
// made acknowledgements due (takeDue).
func (q *writeQueue) flush() (due bool) {
	q.mu.Lock()
	q.claimed = false
	if q.writing || q.flushing || q.broken || q.raw == nil || len(q.buf) == 0 && len(q.tails) == 0 {
		q.cond.Signal()
		q.mu.Unlock()
		return false
	}
	batch, tails, raw := q.buf, q.tails, q.raw
	q.buf, q.tails, q.spare, q.spareTails = q.spare, q.spareTails, nil, nil
	q.flushing = true
	q.mu.Unlock()

	var iov [][]byte
	total := 0
	iov = gather(iov, batch, tails, maxIov)
	for _, p := range iov {
		total += len(p)
	}
	n, werr := 0, error(nil)
	if total <= directMax { // else: to the writer, as in enqueue
		if err := raw.Write(func(fd uintptr) bool {
			n, werr = unix.Writev(int(fd), iov)
			return true // once, never waiting: what is left goes to the writer
		}); err != nil {
			werr = err
		}
	}
	if n < 0 || errors.Is(werr, unix.EAGAIN) {
		n = 0
		werr = nil
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	q.flushing = false
	q.written += uint64(n)
	due = q.dueLocked()
	if werr != nil {
		q.broken = true // the writer meets the error and sees to it
	}
	if n == total && n == bytesIn(batch, tails) {
		clear(tails)
		if cap(batch) <= maxSpare {
			q.spare = batch[:0]
		}
		q.spareTails = tails[:0]
	} else {
		// The rest goes first, in a buffer of its own (reused); a
		// borrowed payload's rest is copied into it rather than its
		// chunk kept: a new chunk per large message would be garbage
		// at the rate messages pass.
		rb, rt := remainder(q.rest[:0], batch, tails, n)
		for _, t := range q.tails { // pushed meanwhile, after it
			rt = append(rt, qtail{Tail: frame.Tail{At: len(rb) + t.At, Data: t.Data}, rd: t.rd})
		}
		q.rest = q.buf[:0]
		q.buf, q.tails = append(rb, q.buf...), rt
		clear(tails)
		if cap(batch) <= maxSpare {
			q.spare = batch[:0]
		}
		q.spareTails = tails[:0]
	}
	if len(q.buf) > 0 || len(q.tails) > 0 || q.closed {
		q.cond.Signal()
	}
	return due
}

// dueLocked says whether an acknowledgement is due.
func (q *writeQueue) dueLocked() bool {
	return q.ackHead < len(q.acks) && q.acks[q.ackHead].end <= q.written
}

// wrote counts n bytes written by the writer goroutine; due: that made
// acknowledgements due.
func (q *writeQueue) wrote(n int) (due bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.written += uint64(n)
	return q.dueLocked()
}

// takeDue moves into buf the acknowledgements due (at most len(buf)),
// oldest first, and returns how many.
func (q *writeQueue) takeDue(buf []dueAck) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(buf) && q.dueLocked() {
		buf[n] = q.acks[q.ackHead]
		q.acks[q.ackHead] = dueAck{} // let its job go
		q.ackHead++
		n++
	}
	if q.ackHead == len(q.acks) {
		q.acks, q.ackHead = q.acks[:0], 0
	}
	return n
}

// ackAfter makes ack due once what is queued now is written, and says
// so; false (nothing queued is unwritten): it is due now, the caller
// sends it.
func (q *writeQueue) ackAfter(ack dueAck) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.written == q.pushed {
		return false
	}
	ack.end = q.pushed
	q.acks = append(q.acks, ack)
	return true
}

// bytesIn is the size of batch with its tails.
func bytesIn(batch []byte, tails []qtail) int {
	n := len(batch)
	for _, t := range tails {
		n += len(t.Data)
	}
	return n
}

// gather appends to iov, up to max pieces, the pieces to write in order:
// buf cut at each tail's offset (ascending), with the tails in between.
func gather(iov [][]byte, buf []byte, tails []qtail, max int) [][]byte {
	last := 0
	for _, t := range tails {
		if len(iov)+2 > max {
			return iov
		}
		if t.At > last {
			iov = append(iov, buf[last:t.At:t.At])
		}
		if len(t.Data) > 0 {
			iov = append(iov, t.Data)
		}
		last = t.At
	}
	if last < len(buf) && len(iov) < max {
		iov = append(iov, buf[last:])
	}
	return iov
}

// remainder is what is left of batch (with its tails) once its first n
// bytes are written, appended to rb, and the tails not wholly written; a
// borrowed one's rest is copied into rb.
func remainder(rb []byte, batch []byte, tails []qtail, n int) ([]byte, []qtail) {
	var rt []qtail
	seg := func(b []byte) {
		if n >= len(b) {
			n -= len(b)
			return
		}
		rb = append(rb, b[n:]...)
		n = 0
	}
	last := 0
	for _, t := range tails {
		seg(batch[last:t.At])
		last = t.At
		if n >= len(t.Data) {
			n -= len(t.Data)
			continue
		}
		if t.rd != nil {
			rb = append(rb, t.Data[n:]...)
		} else {
			rt = append(rt, qtail{Tail: frame.Tail{At: len(rb), Data: t.Data[n:]}})
		}
		n = 0
	}
	seg(batch[last:])
	return rb, rt
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
// queue is closed and empty. It leaves the queue alone while a producer
// has claimed it or flushes it.
func (q *writeQueue) take(done []byte, doneTails []qtail) (batch []byte, tails []qtail, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.writing = false
	if cap(done) <= maxSpare && done != nil {
		q.spare = done[:0]
	}
	clear(doneTails) // the payloads are written: let them go
	if doneTails != nil {
		q.spareTails = doneTails[:0]
	}
	for len(q.buf) == 0 && len(q.tails) == 0 && !q.closed && !q.moved || q.claimed || q.flushing {
		q.cond.Wait()
	}
	if q.moved {
		q.moved = false
		return nil, nil, errPeerMoved
	}
	if len(q.buf) == 0 && len(q.tails) == 0 {
		return nil, nil, io.EOF
	}
	batch, q.buf, q.spare = q.buf, q.spare, nil
	tails, q.tails, q.spareTails = q.tails, q.spareTails, nil
	q.writing = true
	return batch, tails, nil
}

// errPeerMoved ends a connection to a peer whose relay restarted elsewhere
// or closed it (closeIfMoved, watchClose).
var errPeerMoved = errors.New("the peer's relay moved to another address or closed the connection")

// interrupt makes the writer leave its connection before it writes to it
// again (drain returns errPeerMoved), and stops direct writes to it: the
// peer moved or died, and what went to the old connection would be lost
// without an error. What is pushed meanwhile waits for the next
// connection.
func (q *writeQueue) interrupt() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moved, q.broken = true, true
	q.cond.Broadcast()
}

// uninterrupt forgets an interrupt drain did not meet (it had failed
// already): it was for the connection the writer left.
func (q *writeQueue) uninterrupt() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moved = false
}

// drain writes everything pushed to q into c until q is closed and empty
// or a write fails. A c that buffers (a TLS link's, see sealedWriter) is
// flushed after each batch. acks, if set, is called after a batch whose
// write made acknowledgements due (takeDue).
func drain(q *writeQueue, c io.Writer, acks func(*writeQueue)) error {
	flusher, _ := c.(interface{ Flush() error })
	var done []byte
	var doneTails []qtail
	var iov [][]byte
	for {
		batch, tails, err := q.take(done, doneTails)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(tails) == 0 {
			_, err = c.Write(batch)
		} else {
			iov = gather(iov[:0], batch, tails, len(tails)*2+1)
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
		if acks != nil && q.wrote(bytesIn(batch, tails)) {
			acks(q)
		}
		done, doneTails = batch, tails
	}
}

// sealedWriter gathers a batch's pieces (frame headers, payloads written
// from where they lie) into TLS records of up to 16 KiB: written one by
// one, each small header would be a record (and a seal) of its own.
func sealedWriter(c net.Conn) *bufio.Writer { return bufio.NewWriterSize(c, 16<<10) }
