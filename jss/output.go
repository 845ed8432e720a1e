package jss

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cosched/cosched/jss/swf"
)

// Ordered returns an emit function that passes results to next in arrival
// order (Result.Seq) instead of completion order, holding back results that
// complete before an earlier-submitted job. It holds only that backlog, not
// the run.
func Ordered(next func(Result) error) func(Result) error {
	held := map[int64]Result{}
	var want int64
	return func(r Result) error {
		if r.Seq != want {
			held[r.Seq] = r
			return nil
		}
		if err := next(r); err != nil {
			return err
		}
		for want++; ; want++ {
			h, ok := held[want]
			if !ok {
				return nil
			}
			delete(held, want)
			if err := next(h); err != nil {
				return err
			}
		}
	}
}

// SWFWriter writes simulated results as an SWF trace that other tools can
// read: each job's original fields, with field 3 set to the simulated wait,
// field 4 to the simulated runtime, field 5 to the processors it was given
// and field 9 to the estimate the scheduler used. A job the overrun "kill"
// convention cut short gets status 0 (failed). Feed it through Ordered so
// lines stay in submit order.
type SWFWriter struct {
	w *swf.Writer
}

// NewSWFWriter writes the header (the source's fields, MaxProcs set to the
// simulated machine's size, plus notes on the simulation) and returns a
// writer for the results.
func NewSWFWriter(w io.Writer, src *swf.Header, processors int, notes ...string) (*SWFWriter, error) {
	var h swf.Header
	if src != nil {
		h.Fields = append(h.Fields, src.Fields...)
	}
	if processors > 0 {
		if err := h.Set("MaxProcs", strconv.Itoa(processors)); err != nil {
			return nil, fmt.Errorf("jss: write SWF header: %w", err)
		}
	}
	for _, n := range notes {
		h.Fields = append(h.Fields, swf.HeaderField{Key: "Note", Value: n})
	}
	sw := swf.NewWriter(w)
	if err := sw.WriteHeader(&h); err != nil {
		return nil, fmt.Errorf("jss: write SWF header: %w", err)
	}
	return &SWFWriter{w: sw}, nil
}

// Write writes one result.
func (s *SWFWriter) Write(r Result) error {
	var rec swf.Record
	if r.Record != nil {
		rec = *r.Record
	} else {
		rec.SetFields([swf.NumFields]float64{
			float64(r.Number), 0, 0, 0, 0, -1, -1, 0, 0, -1, 1, -1, -1, -1, -1, -1, -1, -1,
		})
		rec.SubmitTime = r.Submit.Seconds()
		rec.RequestedProcessors = float64(r.Processors)
	}
	rec.WaitTime = (r.Start - r.Submit).Seconds()
	rec.RunTime = (r.End - r.Start).Seconds()
	rec.AllocatedProcessors = float64(r.Processors)
	rec.RequestedTime = r.Estimate.Seconds()
	if r.Truncated {
		rec.Status = 0
	}
	if err := s.w.Write(&rec); err != nil {
		return fmt.Errorf("jss: write SWF: %w", err)
	}
	return nil
}

// Flush flushes buffered output.
func (s *SWFWriter) Flush() error { return s.w.Flush() }

// JobsCSVColumns returns the header row of JobsCSVWriter's output. Times
// are in seconds.
func JobsCSVColumns() []string {
	return []string{"id", "submit", "start", "end", "processors", "runtime", "estimate"}
}

// JobsCSVWriter writes one CSV row per job: id (the workload's job number),
// submit, start, end, processors, runtime, estimate; times in seconds.
type JobsCSVWriter struct {
	w   *csv.Writer // buffers internally
	row []string
}

// NewJobsCSVWriter writes the header row and returns the writer.
func NewJobsCSVWriter(w io.Writer) (*JobsCSVWriter, error) {
	cw := csv.NewWriter(w)
	cols := JobsCSVColumns()
	if err := cw.Write(cols); err != nil {
		return nil, fmt.Errorf("jss: write jobs CSV: %w", err)
	}
	return &JobsCSVWriter{w: cw, row: make([]string, len(cols))}, nil
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// Write writes one result.
func (c *JobsCSVWriter) Write(r Result) error {
	c.row[0] = strconv.FormatInt(r.Number, 10)
	c.row[1] = secs(r.Submit)
	c.row[2] = secs(r.Start)
	c.row[3] = secs(r.End)
	c.row[4] = strconv.Itoa(r.Processors)
	c.row[5] = secs(r.End - r.Start)
	c.row[6] = secs(r.Estimate)
	if err := c.w.Write(c.row); err != nil {
		return fmt.Errorf("jss: write jobs CSV: %w", err)
	}
	return nil
}

// Flush flushes buffered output and reports any write error.
func (c *JobsCSVWriter) Flush() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("jss: write jobs CSV: %w", err)
	}
	return nil
}
