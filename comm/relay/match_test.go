package relay

import (
	"testing"

	"github.com/cosched/cosched/comm"
)

func TestMatcherOrderAndWildcards(t *testing.T) {
	var m matcher
	// Messages before receives: queued in order.
	for i, e := range []envelope{{src: 1, tag: 5, data: []byte("a")}, {src: 2, tag: 5, data: []byte("b")}, {src: 1, tag: 5, data: []byte("c")}, {src: 1, tag: 6, data: []byte("d")}} {
		if _, ok := m.arrive(e); ok {
			t.Fatalf("message %d matched with nothing posted", i)
		}
	}
	if m.queued != 4 {
		t.Fatalf("queued %d bytes", m.queued)
	}
	take := func(src, tag int) string {
		e, ok := m.post(posted{req: 1, src: src, tag: tag})
		if !ok {
			t.Fatalf("post(%d, %d) found nothing", src, tag)
		}
		return string(e.data)
	}
	if got := take(1, 5); got != "a" { // oldest of (1, 5)
		t.Fatalf("got %q", got)
	}
	if got := take(comm.AnySource, 5); got != "b" { // oldest with tag 5
		t.Fatalf("got %q", got)
	}
	if got := take(1, comm.AnyTag); got != "c" { // oldest from 1
		t.Fatalf("got %q", got)
	}
	// A collective-context receive never takes a user message.
	if _, ok := m.post(posted{req: 9, src: comm.AnySource, tag: comm.AnyTag, ctx: comm.ContextCollective}); ok {
		t.Fatal("a collective receive matched a user message")
	}
	if got := take(comm.AnySource, comm.AnyTag); got != "d" {
		t.Fatalf("got %q", got)
	}
	// Receives before messages: the oldest matching receive wins.
	m.post(posted{req: 2, src: 3, tag: 1})
	m.post(posted{req: 3, src: comm.AnySource, tag: 1})
	if p, ok := m.arrive(envelope{src: 4, tag: 1}); !ok || p.req != 3 {
		t.Fatalf("message from 4 went to %+v %v, want req 3", p, ok)
	}
	if p, ok := m.arrive(envelope{src: 3, tag: 1}); !ok || p.req != 2 {
		t.Fatalf("message from 3 went to %+v %v, want req 2", p, ok)
	}
	if p, ok := m.arrive(envelope{src: 5, tag: 0, ctx: comm.ContextCollective}); !ok || p.req != 9 {
		t.Fatalf("collective message went to %+v %v, want req 9", p, ok)
	}
	if len(m.posted) != 0 || len(m.unexpected) != 0 || m.queued != 0 {
		t.Fatalf("left: %+v", m)
	}
}
