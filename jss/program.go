package jss

import (
	"time"

	"github.com/cosched/cosched/bench"
)

// Program is a benchmark job's behaviour: its template, its size and how
// many iterations it runs. Compute times are a pure function of (seed,
// process, iteration), so every execution model sees the same draws.
type Program struct {
	Template   bench.Template
	Procs      int
	Iterations int
	Seed       uint64
	steps      [][]bench.Step // per process, for B and NB patterns alike
	perIter    int            // messages each process sends per iteration
	scale      float64        // Overheads.ComputeScale (0: 1)
}

// NewProgram prepares a program.
func NewProgram(t bench.Template, procs, iterations int, seed uint64) *Program {
	p := &Program{Template: t, Procs: procs, Iterations: max(iterations, 1), Seed: seed}
	if t.Pattern != bench.Barrier {
		p.steps = make([][]bench.Step, procs)
		for q := range p.steps {
			p.steps[q] = bench.Steps(t.Pattern, q, procs)
		}
		if procs > 0 {
			p.perIter = len(p.steps[0])
		}
	}
	return p
}

// Compute returns process q's compute time in iteration i: the template's
// draw for (seed, q, i), the same one the runtime's benchmark ranks use
// (bench.Template.Compute).
func (p *Program) Compute(q, i int) time.Duration {
	return p.Template.Compute(p.Seed, q, i)
}

// work is how long process q's compute phase of iteration i occupies its
// processor: the draw, stretched by Overheads.ComputeScale.
func (p *Program) work(q, i int) time.Duration {
	c := p.Compute(q, i)
	if p.scale > 0 && p.scale != 1 {
		return time.Duration(float64(c) * p.scale)
	}
	return c
}

// Dedicated is a program's run alone on its processors with immediate
// messages: the runtime every other model is compared with.
type Dedicated struct {
	Runtime time.Duration // execution time alone
	Compute time.Duration // total compute time, summed over processes
}

// RunDedicated executes p alone. Sends are eager (a process continues
// after injecting a message, one transfer time per message from its node);
// a message arrives one transfer plus the latency after it was sent; a
// barrier completes one tree traversal after the last arrival.
//
//   - barrier: every process waits for the slowest.
//   - NB: each process sends all its messages back to back, then all meet
//     at a barrier once every message has arrived.
//   - B: step by step, send to To, then wait for the message from From.
func (p *Program) RunDedicated(net bench.Network) Dedicated {
	n := p.Procs
	xfer := net.Transfer()
	t := make([]time.Duration, n)    // when each process starts the iteration
	x := make([]time.Duration, n)    // scratch: each process's clock within communication
	next := make([]time.Duration, n) // scratch
	var d Dedicated
	for i := 0; i < p.Iterations; i++ {
		for q := 0; q < n; q++ {
			d.Compute += p.Compute(q, i)
			x[q] = t[q] + p.work(q, i)
		}
		switch {
		case n <= 1:
			copy(t, x)
		case p.Template.Pattern == bench.Barrier:
			rel := maxOf(x) + net.Barrier(n)
			fill(t, rel)
		case p.Template.Sync == bench.NonBlocking:
			// The k-th message of q (0-based) arrives at x[q]+(k+1)·xfer+latency;
			// a process is done when its own sends and incoming messages are.
			for q := 0; q < n; q++ {
				next[q] = x[q] + time.Duration(p.perIter)*xfer
			}
			for q := 0; q < n; q++ {
				for k, st := range p.steps[q] {
					arrive := x[q] + time.Duration(k+1)*xfer + net.Latency
					next[st.To] = max(next[st.To], arrive)
				}
			}
			fill(t, maxOf(next)+net.Barrier(n))
		default: // blocking steps
			for s := 0; s < p.perIter; s++ {
				for q := 0; q < n; q++ {
					from := p.steps[q][s].From
					next[q] = max(x[q]+xfer, x[from]+xfer+net.Latency)
				}
				x, next = next, x
			}
			copy(t, x)
		}
	}
	d.Runtime = maxOf(t)
	return d
}

func maxOf(v []time.Duration) time.Duration {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

func fill(v []time.Duration, x time.Duration) {
	for i := range v {
		v[i] = x
	}
}
