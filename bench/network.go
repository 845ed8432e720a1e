package bench

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Network is the interconnect a benchmark job's messages cross: what its
// iterations cost (IterationEstimate) and, in the simulator, every
// execution model's messages and barriers.
type Network struct {
	MessageSize int           // bytes per message (4 KB)
	Bandwidth   float64       // bytes per second per node (100 MB/s)
	Latency     time.Duration // per message, and per level of a barrier tree
}

// DefaultNetwork is the BCS study's interconnect: 4 KB messages at 100 MB/s,
// with a 10 µs latency.
func DefaultNetwork() Network {
	return Network{MessageSize: DefaultMessageSize, Bandwidth: 100e6, Latency: 10 * time.Microsecond}
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
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("bench: %w", errors.Join(errs...))
}

// Transfer is the time to push one message onto the wire.
func (n Network) Transfer() time.Duration {
	return time.Duration(float64(n.MessageSize) / n.Bandwidth * float64(time.Second))
}

// Barrier is the time a barrier takes once the last process arrives: a
// tree of log2(procs) levels.
func (n Network) Barrier(procs int) time.Duration {
	if procs <= 1 {
		return 0
	}
	return time.Duration(math.Ceil(math.Log2(float64(procs)))) * n.Latency
}

// Iterations is how many iterations of t on procs processes make runtime
// of dedicated run time (at least one): what the simulator runs for a job
// of that runtime, and what a benchmark rank is given for it.
func Iterations(t Template, procs int, net Network, runtime time.Duration) int {
	return max(1, int(math.Round(float64(runtime)/float64(IterationEstimate(t, procs, net)))))
}

// IterationEstimate is the expected dedicated time of one iteration, used
// to turn a target runtime into a number of iterations (and back, for a
// benchmark job's time limit): the expected slowest compute time among the
// processes that synchronise, plus the communication.
func IterationEstimate(t Template, procs int, net Network) time.Duration {
	lo := t.Grain - t.Imbalance/2
	// E[max of n uniforms on (lo, lo+v)] = lo + v·n/(n+1).
	n := procs
	if t.Sync == Blocking && t.Pattern == News {
		n = min(procs, 5) // a process waits only on its neighbours
	}
	compute := lo + time.Duration(float64(t.Imbalance)*float64(n)/float64(n+1))
	msgs := MessagesPerIteration(t.Pattern, 0, procs)
	comm := time.Duration(msgs)*net.Transfer() + net.Latency
	if t.Pattern == Barrier || t.Sync == NonBlocking {
		comm += net.Barrier(procs)
	}
	if procs <= 1 {
		comm = 0
	}
	return compute + comm
}
