// Package bcs is a node's buffered-coscheduling slice planning, pure: no
// I/O, clock, lock or goroutine. The relay (package relay) is its shell:
// it hands over what local ranks send (Outbox.Add), marks the strobe that
// cuts a slice (Outbox.Mark), takes each slice's transfer when it is
// planned (Outbox.Take: what is sent in which slice, within h_max) and
// asks whether a node that finished a job may leave it (Leave) and
// whether a slice's rooted exchange is complete here (Exchanged,
// AllReported). The relay keeps the message payloads as the values it
// adds; this package sees only their destinations, jobs and sizes. What
// the exchange carries is decided here too: a root's answer to a slice
// (Answer: what each of the job's nodes is told is coming) and where a
// heartbeat heard too late sends its flows (Redirect); the relay sends
// the frames.
package bcs

import (
	"cmp"
	"slices"
	"strings"
)

// Msg is a message handed over for a later slice.
type Msg[T any] struct {
	N     uint64 // handed-over order, from 0
	Node  string // its destination node
	Job   int64
	Bytes int64 // its payload's size
	Value T     // the relay's own (the message)
}

// Flow is what a node transfers to one node for one job in a slice: what
// its heartbeat announces.
type Flow struct {
	Node  string
	Job   int64
	Msgs  int
	Bytes int64
}

// Plan is one slice's transfer.
type Plan[T any] struct {
	Msgs  []Msg[T] // in handed-over order
	Flows []Flow   // by destination node, then job
	Bytes int64    // the Msgs' bytes
	// Deferred: messages handed over before the slice's cut were left
	// for a later slice (h_max).
	Deferred bool
	Waiting  int // messages left in the outbox
}

// Outbox is what local ranks handed over and no slice has taken yet,
// oldest first. The zero value is empty and ready.
type Outbox[T any] struct {
	msgs []Msg[T]
	next uint64
}

// Add hands over a message for node.
func (o *Outbox[T]) Add(node string, job int64, bytes int64, v T) {
	o.msgs = append(o.msgs, Msg[T]{N: o.next, Node: node, Job: job, Bytes: bytes, Value: v})
	o.next++
}

// Mark is a slice's cut: the messages numbered below it were handed over
// before it, and only they may go in that slice.
func (o *Outbox[T]) Mark() uint64 { return o.next }

// Take plans a slice cut at upTo (Mark): the oldest messages handed over
// before it, up to hmax bytes but at least one (a message larger than
// hmax goes alone; hmax ≤ 0: no limit). Slices must be taken in the
// order they were cut, so that the older messages go first.
func (o *Outbox[T]) Take(upTo uint64, hmax int64) Plan[T] {
	var p Plan[T]
	n := 0
	for n < len(o.msgs) && o.msgs[n].N < upTo {
		size := o.msgs[n].Bytes
		if hmax > 0 && n > 0 && p.Bytes+size > hmax {
			break
		}
		p.Bytes += size
		n++
	}
	p.Msgs = slices.Clone(o.msgs[:n])
	clear(o.msgs[:n]) // the payloads are the plan's now
	o.msgs = o.msgs[n:]
	p.Deferred = len(o.msgs) > 0 && o.msgs[0].N < upTo
	p.Waiting = len(o.msgs)
	p.Flows = Flows(p.Msgs)
	return p
}

// Flows adds up msgs per destination node and job, sorted.
func Flows[T any](msgs []Msg[T]) []Flow {
	type key struct {
		node string
		job  int64
	}
	at := map[key]int{}
	var fs []Flow
	for _, m := range msgs {
		k := key{m.Node, m.Job}
		i, ok := at[k]
		if !ok {
			i = len(fs)
			at[k] = i
			fs = append(fs, Flow{Node: m.Node, Job: m.Job})
		}
		fs[i].Msgs++
		fs[i].Bytes += m.Bytes
	}
	slices.SortFunc(fs, func(a, b Flow) int {
		return cmp.Or(strings.Compare(a.Node, b.Node), cmp.Compare(a.Job, b.Job))
	})
	return fs
}

// DropJob forgets a job's messages (the job was removed).
func (o *Outbox[T]) DropJob(job int64) {
	o.msgs = slices.DeleteFunc(o.msgs, func(m Msg[T]) bool { return m.Job == job })
}

// HasJob says whether a message of job waits.
func (o *Outbox[T]) HasJob(job int64) bool {
	return slices.ContainsFunc(o.msgs, func(m Msg[T]) bool { return m.Job == job })
}

// Len is the number of messages waiting.
func (o *Outbox[T]) Len() int { return len(o.msgs) }

// TakeAll empties the outbox (leaving buffered mode: everything goes at
// once), oldest first.
func (o *Outbox[T]) TakeAll() []Msg[T] {
	all := o.msgs
	o.msgs = nil
	return all
}

// Finished is what a node knows, at a transfer, of a job whose local
// ranks have all ended (it finishes it).
type Finished struct {
	// Pending: slices cut here wait for their transfer; each needs this
	// node's heartbeat (and, at the job's root, its sliceReady).
	Pending bool
	Queued  bool // messages of the job wait in the outbox
	// TimedOut: the last transfer went at its heartbeat timeout, so the
	// job's root may still hear a late heartbeat for that slice.
	TimedOut bool
	Overdue  bool // it stayed once already for a transfer that timed out
}

// Leave says whether a node leaves a job it finished: once it owes the
// job nothing (no slice pending, no message queued). After a transfer
// that timed out it stays one transfer more (overdue: true), then leaves
// whatever. force (leaving buffered mode) leaves at once.
func Leave(f Finished, force bool) (leave, overdue bool) {
	switch {
	case force:
		return true, f.Overdue
	case f.Pending || f.Queued:
		return false, f.Overdue
	case f.TimedOut && !f.Overdue:
		return false, true
	}
	return true, f.Overdue
}
