package jss

import (
	"context"
)

// prefetchBatch is how many jobs the reading goroutine hands over at a
// time: one channel operation per batch, not per job, and a batch small
// enough (32 KB) to stay in cache between the two goroutines.
const prefetchBatch = 256

// prefetchDepth is how many batches may wait, read and not yet simulated:
// enough to ride out a burst of slow passes, bounded so that memory does
// not grow with the trace.
const prefetchDepth = 8

// jobBatch is a run of jobs in source order; err, if set, is what the
// source returned after the last of them (io.EOF at the end).
type jobBatch struct {
	jobs []Job
	err  error
}

// prefetcher is a Source that reads another one ahead on a goroutine of
// its own: parsing and converting the trace (a fifth of a run) overlap
// the simulation on a second core. It delivers exactly the jobs and the
// error the source gives, in the same order, so a run is the same.
// Its owner calls stop, which returns once the goroutine has ended; only
// then may the source be read again (its counts) or closed.
type prefetcher struct {
	batches <-chan jobBatch
	more    chan<- struct{} // the reader may go on: half the batches are taken
	free    chan []Job      // the consumer's used batches, for the reader to refill
	ctx     context.Context
	cur     jobBatch
	i       int
	cancel  context.CancelFunc
	done    <-chan struct{}
}

// prefetch starts reading src ahead. The goroutine exits at the source's
// end or error, or when stop is called (or ctx is done).
func prefetch(ctx context.Context, src Source) *prefetcher {
	ctx, cancel := context.WithCancel(ctx)
	batches := make(chan jobBatch, prefetchDepth)
	more := make(chan struct{}, 1)
	done := make(chan struct{})
	p := &prefetcher{batches: batches, more: more, free: make(chan []Job, prefetchDepth+2), ctx: ctx, cancel: cancel, done: done}
	go func() {
		defer close(done)
		defer close(batches)
		for {
			if len(batches) == cap(batches) {
				// Full: wait until half are taken, not for each one, so
				// that this goroutine wakes a few times a trace, not at
				// every batch (each wake is a futex call and a thread
				// switch, which cost more than reading the batch).
				select {
				case <-more:
				case <-ctx.Done():
					return
				}
			}
			var jobs []Job
			select {
			case jobs = <-p.free:
			default:
				jobs = make([]Job, 0, prefetchBatch)
			}
			b := jobBatch{jobs: jobs[:0]}
			for len(b.jobs) < prefetchBatch {
				j, err := src.Next()
				if err != nil {
					b.err = err
					break
				}
				b.jobs = append(b.jobs, j)
			}
			select {
			case batches <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return p
}

// Next implements Source.
func (p *prefetcher) Next() (Job, error) {
	var j Job
	err := p.nextInto(&j)
	return j, err
}

// nextInto writes the next job into *j (an intoSource): one copy from
// the batch, where Next's result was copied twice more by its caller.
// *j is left as it was when there is none.
func (p *prefetcher) nextInto(j *Job) error {
	for p.i >= len(p.cur.jobs) {
		if p.cur.err != nil {
			return p.cur.err
		}
		if p.cur.jobs != nil {
			select {
			case p.free <- p.cur.jobs:
			default: // full: the garbage collector has it
			}
		}
		b, ok := <-p.batches
		if !ok { // stopped before the source's end
			return context.Cause(p.ctx)
		}
		p.cur, p.i = b, 0
		if len(p.batches) == prefetchDepth/2 {
			select {
			case p.more <- struct{}{}:
			default: // already said
			}
		}
	}
	*j = p.cur.jobs[p.i]
	p.i++
	return nil
}

// stop ends the reading goroutine and waits for it; it may be called
// more than once.
func (p *prefetcher) stop() {
	p.cancel()
	<-p.done
}

// compile-time check
var _ intoSource = (*prefetcher)(nil)
