package freelist

import "testing"

// TestReuse: Get gives back what Put released, last first, then new
// zero records.
func TestReuse(t *testing.T) {
	var l List[int]
	a, b := l.Get(), l.Get()
	if a == b || *a != 0 || *b != 0 {
		t.Fatalf("two new records: %p %p (%d, %d)", a, b, *a, *b)
	}
	*a, *b = 1, 2
	l.Put(a)
	l.Put(b)
	if got := l.Get(); got != b || *got != 2 {
		t.Fatalf("first Get after Put(a), Put(b): %p, want b %p", got, b)
	}
	if got := l.Get(); got != a {
		t.Fatalf("second Get: %p, want a %p", got, a)
	}
	if c := l.Get(); c == a || c == b || *c != 0 {
		t.Fatalf("Get of an empty list reused %p", c)
	}
}
