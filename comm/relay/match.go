package relay

import (
	"bytes"

	"github.com/cosched/cosched/comm"
)

// envelope is a message waiting for a receive at its destination rank.
type envelope struct {
	src, tag, ctx int
	data          []byte
	seq           uint64 // its number from src (0: unnumbered)
}

// posted is a receive waiting for a message.
type posted struct {
	req           uint64
	src, tag, ctx int
}

func (p posted) matches(e envelope) bool {
	return p.ctx == e.ctx &&
		(p.src == comm.AnySource || p.src == e.src) &&
		(p.tag == comm.AnyTag || p.tag == e.tag)
}

// matcher is one rank's matching state: messages that arrived before a
// receive matched them, and receives posted before a message matched
// them. At most one of the two is non-empty for any (source, tag,
// context), and both are kept in arrival order, so a message always goes
// to the oldest receive it matches and a receive takes the oldest
// message it matches: exactly once, in order per (source, tag).
type matcher struct {
	unexpected []envelope
	posted     []posted
	queued     int // bytes in unexpected
}

// arrive matches e against the posted receives; if none matches, a copy
// of e queues.
func (m *matcher) arrive(e envelope) (posted, bool) {
	if p, ok := m.take(e); ok {
		return p, true
	}
	e.data = bytes.Clone(e.data) // it was borrowed from the frame that carried it
	m.queue(e)
	return posted{}, false
}

// take removes and returns the oldest posted receive e matches.
func (m *matcher) take(e envelope) (posted, bool) {
	for i, p := range m.posted {
		if p.matches(e) {
			m.posted = remove(m.posted, i)
			return p, true
		}
	}
	return posted{}, false
}

// queue keeps e, whose data must be its own, until a receive takes it; e
// matches no posted receive.
func (m *matcher) queue(e envelope) {
	m.unexpected = append(m.unexpected, e)
	m.queued += len(e.data)
}

// post matches p against the queued messages; if none matches, p waits.
func (m *matcher) post(p posted) (envelope, bool) {
	for i, e := range m.unexpected {
		if p.matches(e) {
			m.unexpected = remove(m.unexpected, i)
			m.queued -= len(e.data)
			return e, true
		}
	}
	m.posted = append(m.posted, p)
	return envelope{}, false
}

// cancel removes the posted receive req, reporting whether it was there.
func (m *matcher) cancel(req uint64) bool {
	for i, p := range m.posted {
		if p.req == req {
			m.posted = remove(m.posted, i)
			return true
		}
	}
	return false
}

// queuedSeq reports whether message seq from src is queued.
func (m *matcher) queuedSeq(src int, seq uint64) bool {
	for _, e := range m.unexpected {
		if e.src == src && e.seq == seq {
			return true
		}
	}
	return false
}

// peek returns the oldest queued message p matches, leaving it queued.
func (m *matcher) peek(p posted) (envelope, bool) {
	for _, e := range m.unexpected {
		if p.matches(e) {
			return e, true
		}
	}
	return envelope{}, false
}

// remove deletes s[i]. The head, by far the most common case (streams are
// matched in order), is dropped by reslicing, without moving the rest: a
// queue of thousands of early messages must not cost a copy per receive.
func remove[T any](s []T, i int) []T {
	var zero T
	if i == 0 {
		s[0] = zero // let the GC have its payload
		return s[1:]
	}
	copy(s[i:], s[i+1:])
	s[len(s)-1] = zero
	return s[:len(s)-1]
}
