package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Run simulates points, at most parallel at once (GOMAXPROCS when parallel
// < 1), and returns their rows in the order of points, Row.Index set to the
// point's position in points.
//
// progress, if not nil, is called with (0, len(points)) first and then once
// after each point, never concurrently, done increasing to len(points).
//
// The first failing point cancels the others and its error, naming the
// point, is returned. A cancelled ctx stops the run promptly (running points
// notice within a few thousand model steps) and makes Run fail, even if the
// last point had just finished: the caller asked to stop.
//
// Rows depend only on m and the points, never on parallel or timing.
func Run(ctx context.Context, m Machine, points []Point, parallel int, progress func(done, total int)) ([]Row, error) {
	return run(ctx, m, points, nil, parallel, progress)
}

// run is Run with each point's index given by index[i] (i when index is
// nil), for the rows and the errors.
func run(ctx context.Context, m Machine, points []Point, index []int, parallel int, progress func(done, total int)) ([]Row, error) {
	if parallel < 1 {
		parallel = runtime.GOMAXPROCS(0)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sweep: not started: %w", err)
	}
	total := len(points)
	rows := make([]Row, total)
	var mu sync.Mutex // serializes progress calls and guards done
	done := 0
	if progress != nil {
		progress(0, total)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, p := range points {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // cancelled while waiting: the cause is reported below
			}
			at := i
			if index != nil {
				at = index[i]
			}
			row, err := RunPoint(gctx, m, p)
			if err != nil {
				return pointError(at, p, err)
			}
			row.Index = at
			rows[i] = row
			mu.Lock()
			done++
			if progress != nil {
				progress(done, total)
			}
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		// The caller cancelled: say so rather than which point noticed first.
		return nil, fmt.Errorf("sweep: stopped after %d of %d points: %w", done, total, context.Cause(ctx))
	}
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// pointError names the failing point by index. RunPoint's errors already
// read "sweep: <point>: <cause>"; that layer is replaced rather than nested.
func pointError(i int, p Point, err error) error {
	if inner := errors.Unwrap(err); inner != nil && err.Error() == fmt.Sprintf("sweep: %v: %v", p, inner) {
		err = inner
	}
	return fmt.Errorf("sweep: point %d (%v): %w", i, p, err)
}

// Execute validates spec, expands it, and runs the points of shard (all of
// them for the zero Shard) on m. The rows carry their indices in the whole
// sweep; the results record the spec with repeats dropped from its lists.
// progress is as for Run, counting the shard's points.
func Execute(ctx context.Context, m Machine, spec Spec, shard Shard, parallel int, progress func(done, total int)) (*Results, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := shard.validate(); err != nil {
		return nil, err
	}
	spec = spec.normalized()
	all := Expand(spec)
	idx := shard.Indices(len(all))
	points := make([]Point, len(idx))
	for i, j := range idx {
		points[i] = all[j]
	}
	rows, err := run(ctx, m, points, idx, parallel, progress)
	if err != nil {
		return nil, err
	}
	return &Results{Spec: spec, Machine: m.Info(), Shard: shard.String(), Total: len(all), Rows: rows}, nil
}
