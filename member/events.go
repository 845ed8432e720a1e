package member

import (
	"fmt"
	"sync"
)

// EventKind says what happened to a member.
type EventKind uint8

const (
	EventJoin   EventKind = iota + 1 // a member appeared (or came back)
	EventLeave                       // a member left gracefully or was declared failed (memberlist does not say which)
	EventUpdate                      // a member's Meta changed
)

func (k EventKind) String() string {
	switch k {
	case EventJoin:
		return "join"
	case EventLeave:
		return "leave"
	case EventUpdate:
		return "update"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is a change in membership.
type Event struct {
	Kind EventKind
	Meta Meta // for a Leave, the member's last Meta (only Name if it was unreadable)
}

// eventQueue decouples memberlist's callbacks from the Events consumer.
// memberlist calls its EventDelegate from its own goroutines (never
// concurrently) and must not be blocked, so push only appends under a
// mutex. While events wait, they are coalesced per member (the newest
// state wins; an Update of a Join not yet delivered stays a Join): the
// backlog is bounded by the number of members, and nothing is lost that
// Members would not also show. A single forwarder goroutine moves events
// to the channel in order of their first arrival.
type eventQueue struct {
	out  chan Event
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	order   []string // names with a pending event, oldest first
	pending map[string]Event
	closed  bool
}

func newEventQueue(capacity int) *eventQueue {
	q := &eventQueue{
		out:     make(chan Event, capacity),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		pending: make(map[string]Event),
	}
	q.wg.Add(1)
	go q.forward()
	return q
}

// push never blocks (beyond a short critical section).
func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	name := ev.Meta.Name
	if prev, ok := q.pending[name]; ok {
		if prev.Kind == EventJoin && ev.Kind == EventUpdate {
			ev.Kind = EventJoin
		}
	} else {
		q.order = append(q.order, name)
	}
	q.pending[name] = ev
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// forward is the queue's goroutine; it exits on close and then closes
// the Events channel.
func (q *eventQueue) forward() {
	defer q.wg.Done()
	defer close(q.out)
	for {
		q.mu.Lock()
		var ev Event
		have := len(q.order) > 0
		if have {
			name := q.order[0]
			q.order = q.order[1:]
			ev = q.pending[name]
			delete(q.pending, name)
		}
		q.mu.Unlock()
		if !have {
			select {
			case <-q.wake:
				continue
			case <-q.done:
				return
			}
		}
		select {
		case q.out <- ev:
		case <-q.done:
			return
		}
	}
}

// close stops the forwarder, waits for it, and closes the channel;
// undelivered events are dropped. Idempotent.
func (q *eventQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.mu.Unlock()
	close(q.done)
	q.wg.Wait()
}
