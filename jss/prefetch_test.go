package jss

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cosched/cosched/gang"
)

// failingSource delivers n jobs, then err.
type failingSource struct {
	n, i int
	err  error
}

func (s *failingSource) Next() (Job, error) {
	if s.i >= s.n {
		return Job{}, s.err
	}
	s.i++
	return Job{Job: gang.Job{Processors: s.i}, Number: int64(s.i)}, nil
}

// TestPrefetchSameStream: the prefetcher delivers the source's jobs and
// then its error, in order, whatever the error's place in a batch, and
// keeps returning the error.
func TestPrefetchSameStream(t *testing.T) {
	boom := errors.New("boom")
	for _, n := range []int{0, 1, prefetchBatch - 1, prefetchBatch, prefetchBatch + 1, 10*prefetchBatch + 7} {
		for _, end := range []error{io.EOF, boom} {
			p := prefetch(context.Background(), &failingSource{n: n, err: end})
			for i := 1; i <= n; i++ {
				j, err := p.Next()
				if err != nil || j.Number != int64(i) || j.Processors != i {
					t.Fatalf("n=%d: job %d: got %d, %v", n, i, j.Number, err)
				}
			}
			for range 2 {
				if _, err := p.Next(); err != end {
					t.Fatalf("n=%d: after the last job: %v, want %v", n, err, end)
				}
			}
			p.stop()
			p.stop() // a second stop returns too
		}
	}
}

// TestPrefetchStopEarly: a run that ends before its source does (an
// error of its own) stops the reading goroutine, which is blocked on a
// full channel by then, and a cancelled context ends the stream with its
// cause.
func TestPrefetchStopEarly(t *testing.T) {
	src := &failingSource{n: 100 * prefetchBatch, err: io.EOF}
	p := prefetch(context.Background(), src)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	p.stop() // returns: the goroutine has ended
	if src.i >= src.n {
		t.Fatalf("the whole source was read (%d jobs): reading ahead is not bounded", src.i)
	}

	cause := errors.New("interrupted")
	ctx, cancel := context.WithCancelCause(context.Background())
	p = prefetch(ctx, &failingSource{n: 100 * prefetchBatch, err: io.EOF})
	cancel(cause)
	var err error
	for err == nil {
		_, err = p.Next()
	}
	if !errors.Is(err, cause) {
		t.Fatalf("after cancellation: %v, want %v", err, cause)
	}
	p.stop()
}
