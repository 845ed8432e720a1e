package sizepool

import "testing"

// TestReusesBySizeClass checks that a released slice comes back for any
// request of its class, never for a larger one, and that Get always has
// room for what was asked.
func TestReusesBySizeClass(t *testing.T) {
	var p Pool[int]
	for n := 1; n <= 300; n++ {
		s := p.Get(n)
		if len(s) != 0 || cap(s) < n || cap(s) >= 2*n && n > 1 {
			t.Fatalf("Get(%d): len %d cap %d", n, len(s), cap(s))
		}
	}
	a := p.Get(5) // class 3: capacity 8
	a = append(a, 1, 2, 3)
	p.Put(a)
	if b := p.Get(9); cap(b) == 8 {
		t.Fatalf("Get(9) returned a slice of capacity 8")
	}
	b := p.Get(7)
	if cap(b) != 8 || len(b) != 0 || &b[:1][0] != &a[:1][0] {
		t.Fatalf("Get(7) after Put of a capacity-8 slice: cap %d len %d, not the same storage", cap(b), len(b))
	}
	if c := p.Get(8); &c[:1][0] == &a[:1][0] {
		t.Fatalf("the same storage given out twice")
	}
	p.Put(nil)
	p.Put(make([]int, 0, 6)) // not of a class: dropped
	if d := p.Get(5); cap(d) != 8 {
		t.Fatalf("Get(5) after Put of a capacity-6 slice: cap %d, want 8", cap(d))
	}
}
