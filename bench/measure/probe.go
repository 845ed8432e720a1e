package measure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/mono"
)

// The probes `cosched bench calibrate` runs as jobs: each rank prints one
// JSON line (ProbeResult) to its .out file.
const (
	ProbePingPong = "pingpong" // rank 0 ↔ rank 1, round trips
	ProbeStream   = "stream"   // rank 0 → rank 1, count messages, then an acknowledgement
	ProbeBarrier  = "barrier"  // every rank: back-to-back barriers, each release's monotonic time
)

// ProbeResult is what a probe rank prints.
type ProbeResult struct {
	Rank    int     `json:"rank"`
	Size    int     `json:"size"`
	Test    string  `json:"test"`
	Samples []int64 `json:"samples_ns,omitempty"` // pingpong: round trips
	Mono    []int64 `json:"mono_ns,omitempty"`    // barrier: CLOCK_MONOTONIC at each release
	Bytes   int64   `json:"bytes,omitempty"`      // stream: bytes sent
	Elapsed int64   `json:"elapsed_ns,omitempty"` // stream: first send to the acknowledgement
}

// ProbeOptions are one probe rank's settings.
type ProbeOptions struct {
	Test  string // ProbePingPong, ProbeStream or ProbeBarrier
	Count int    // round trips, messages or barriers
	Size  int64  // message size in bytes
}

// Validate checks every field (errors keyed by field, fielderr).
func (o ProbeOptions) Validate() error {
	var errs []error
	if o.Size < 1 || o.Size > comm.MaxMessage {
		errs = append(errs, fielderr.New("Size", o.Size, "want a size from 1 to %d bytes", comm.MaxMessage))
	}
	if o.Count < 1 {
		errs = append(errs, fielderr.New("Count", o.Count, "must be at least 1"))
	}
	switch o.Test {
	case ProbePingPong, ProbeStream, ProbeBarrier:
	default:
		errs = append(errs, fielderr.New("Test", fmt.Sprintf("%q", o.Test), "want %s, %s or %s", ProbePingPong, ProbeStream, ProbeBarrier))
	}
	return errors.Join(errs...)
}

// Probe runs one rank of a probe job (connected to its agent's relay
// through comm) and writes its ProbeResult to out as one JSON line.
func Probe(ctx context.Context, out io.Writer, f ProbeOptions) error {
	if err := f.Validate(); err != nil {
		return err
	}
	size := f.Size
	c, err := comm.Init(ctx)
	if err != nil {
		return fmt.Errorf("bench-probe: connecting to the agent's relay (COSCHED_RELAY): %w", err)
	}
	res := ProbeResult{Rank: c.Rank(), Size: c.Size(), Test: f.Test}
	if f.Test != ProbeBarrier && c.Size() != 2 {
		return fmt.Errorf("bench-probe: %s needs a job of 2 ranks, not %d", f.Test, c.Size())
	}
	buf := make([]byte, size)
	switch f.Test {
	case ProbePingPong:
		const warmup = 20
		for i := range f.Count + warmup {
			t0 := time.Now()
			if c.Rank() == 0 {
				if err := c.Send(ctx, 1, i, buf); err != nil {
					return err
				}
				if _, err := c.Recv(ctx, 1, i); err != nil {
					return err
				}
				if i >= warmup {
					res.Samples = append(res.Samples, int64(time.Since(t0)))
				}
				continue
			}
			if _, err := c.Recv(ctx, 0, i); err != nil {
				return err
			}
			if err := c.Send(ctx, 0, i, buf); err != nil {
				return err
			}
		}
	case ProbeStream:
		if c.Rank() == 0 {
			t0 := time.Now()
			for i := range f.Count {
				if err := c.Send(ctx, 1, i, buf); err != nil {
					return err
				}
			}
			if _, err := c.Recv(ctx, 1, f.Count); err != nil {
				return err
			}
			res.Elapsed, res.Bytes = int64(time.Since(t0)), int64(f.Count)*size
			break
		}
		for i := range f.Count {
			if _, err := c.Recv(ctx, 0, i); err != nil {
				return err
			}
		}
		if err := c.Send(ctx, 0, f.Count, buf[:1]); err != nil {
			return err
		}
	case ProbeBarrier:
		for range f.Count {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			res.Mono = append(res.Mono, mono.Now())
		}
	}
	if err := c.Finalize(ctx); err != nil {
		return fmt.Errorf("bench-probe: finalize: %w", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return errors.Join(errors.New("bench-probe: encoding the result"), err)
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}
