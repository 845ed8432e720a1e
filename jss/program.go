package jss

import (
	"fmt"
	"math"
	"time"

	"github.com/cosched/cosched/bench"
)

// Network is the interconnect model shared by every execution model.
type Network struct {
	MessageSize int           // bytes per message (4 KB)
	Bandwidth   float64       // bytes per second per node (100 MB/s)
	Latency     time.Duration // per message, and per level of a barrier tree
}

// DefaultNetwork is the BCS study's interconnect: 4 KB messages at 100 MB/s,
// with a 10 µs latency.
func DefaultNetwork() Network {
	return Network{MessageSize: bench.DefaultMessageSize, Bandwidth: 100e6, Latency: 10 * time.Microsecond}
}

// Validate reports every problem at once.
func (n Network) Validate() error {
	var errs []error
	if n.MessageSize < 1 {
		errs = append(errs, fmt.Errorf("message size %d must be positive", n.MessageSize))
	}
	if !(n.Bandwidth > 0) || math.IsInf(n.Bandwidth, 0) {
		errs = append(errs, fmt.Errorf("bandwidth %v must be a positive number", n.Bandwidth))
	}
	if n.Latency < 0 {
		errs = append(errs, fmt.Errorf("latency %v must not be negative", n.Latency))
	}
	return joinErrs(errs)
}

// transfer is the time to push one message onto the wire.
func (n Network) transfer() time.Duration {
	return time.Duration(float64(n.MessageSize) / n.Bandwidth * float64(time.Second))
}

// barrier is the time a barrier takes once the last process arrives: a
// tree of log2(procs) levels.
func (n Network) barrier(procs int) time.Duration {
	if procs <= 1 {
		return 0
	}
	return time.Duration(math.Ceil(math.Log2(float64(procs)))) * n.Latency
}

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

// Iterations is how many iterations of t on procs processes make runtime
// of dedicated run time (at least one): what the simulator runs for a job
// of that runtime, and what a benchmark rank is given for it.
func Iterations(t bench.Template, procs int, net Network, runtime time.Duration) int {
	return max(1, int(math.Round(float64(runtime)/float64(IterationEstimate(t, procs, net)))))
}

// IterationEstimate is the expected dedicated time of one iteration, used
// to turn a target runtime into a number of iterations: the expected
// slowest compute time among the processes that synchronise, plus the
// communication.
func IterationEstimate(t bench.Template, procs int, net Network) time.Duration {
	lo := t.Grain - t.Imbalance/2
	// E[max of n uniforms on (lo, lo+v)] = lo + v·n/(n+1).
	n := procs
	if t.Sync == bench.Blocking && t.Pattern == bench.News {
		n = min(procs, 5) // a process waits only on its neighbours
	}
	compute := lo + time.Duration(float64(t.Imbalance)*float64(n)/float64(n+1))
	msgs := bench.MessagesPerIteration(t.Pattern, 0, procs)
	comm := time.Duration(msgs)*net.transfer() + net.Latency
	if t.Pattern == bench.Barrier || t.Sync == bench.NonBlocking {
		comm += net.barrier(procs)
	}
	if procs <= 1 {
		comm = 0
	}
	return compute + comm
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
func (p *Program) RunDedicated(net Network) Dedicated {
	n := p.Procs
	xfer := net.transfer()
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
			rel := maxOf(x) + net.barrier(n)
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
			fill(t, maxOf(next)+net.barrier(n))
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
