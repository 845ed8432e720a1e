package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/mono"
)

// The probes `cosched bench calibrate` runs as jobs: each rank prints one
// JSON line (probeResult) to its .out file.
const (
	probePingPong = "pingpong" // rank 0 ↔ rank 1, round trips
	probeStream   = "stream"   // rank 0 → rank 1, count messages, then an acknowledgement
	probeBarrier  = "barrier"  // every rank: back-to-back barriers, each release's monotonic time
)

type probeFlags struct {
	test  string
	count int
	size  string
}

// probeResult is what a probe rank prints.
type probeResult struct {
	Rank    int     `json:"rank"`
	Size    int     `json:"size"`
	Test    string  `json:"test"`
	Samples []int64 `json:"samples_ns,omitempty"` // pingpong: round trips
	Mono    []int64 `json:"mono_ns,omitempty"`    // barrier: CLOCK_MONOTONIC at each release
	Bytes   int64   `json:"bytes,omitempty"`      // stream: bytes sent
	Elapsed int64   `json:"elapsed_ns,omitempty"` // stream: first send to the acknowledgement
}

func newBenchProbeCmd() *cobra.Command {
	f := probeFlags{count: 100, size: "4KiB"}
	cmd := &cobra.Command{
		Use:    "bench-probe",
		Short:  "One rank of a calibration probe (what bench calibrate runs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchProbe(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.test, "test", "", "pingpong, stream or barrier")
	fl.IntVar(&f.count, "count", f.count, "round trips, messages or barriers")
	fl.StringVar(&f.size, "size", f.size, "message size")
	return cmd
}

func benchProbe(ctx context.Context, out io.Writer, f *probeFlags) error {
	size, err := parseSize(f.size)
	if err != nil || size < 1 || size > comm.MaxMessage {
		return fmt.Errorf("--size %q: want a size from 1 to %d bytes", f.size, comm.MaxMessage)
	}
	if f.count < 1 {
		return fmt.Errorf("--count %d: must be at least 1", f.count)
	}
	switch f.test {
	case probePingPong, probeStream, probeBarrier:
	default:
		return fmt.Errorf("--test %q: want %s, %s or %s", f.test, probePingPong, probeStream, probeBarrier)
	}
	c, err := comm.Init(ctx)
	if err != nil {
		return fmt.Errorf("bench-probe: connecting to the agent's relay (COSCHED_RELAY): %w", err)
	}
	res := probeResult{Rank: c.Rank(), Size: c.Size(), Test: f.test}
	if f.test != probeBarrier && c.Size() != 2 {
		return fmt.Errorf("bench-probe: %s needs a job of 2 ranks, not %d", f.test, c.Size())
	}
	buf := make([]byte, size)
	switch f.test {
	case probePingPong:
		const warmup = 20
		for i := range f.count + warmup {
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
	case probeStream:
		if c.Rank() == 0 {
			t0 := time.Now()
			for i := range f.count {
				if err := c.Send(ctx, 1, i, buf); err != nil {
					return err
				}
			}
			if _, err := c.Recv(ctx, 1, f.count); err != nil {
				return err
			}
			res.Elapsed, res.Bytes = int64(time.Since(t0)), int64(f.count)*size
			break
		}
		for i := range f.count {
			if _, err := c.Recv(ctx, 0, i); err != nil {
				return err
			}
		}
		if err := c.Send(ctx, 0, f.count, buf[:1]); err != nil {
			return err
		}
	case probeBarrier:
		for range f.count {
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
