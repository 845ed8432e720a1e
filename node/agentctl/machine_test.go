package agentctl

import "testing"

// A welcome carries at most MaxWelcomeExits exits: the delivered ones
// first, then as many pending ones as fit; the rest follow on the link as
// rank exits, in order, and count as delivered (bounded by MaxDelivered).
func TestWelcomeExitsAreBounded(t *testing.T) {
	m := New(Config{Incarnation: 1})
	const n = MaxWelcomeExits + 10
	for i := range n {
		m.Exit(Exit{Job: 1, Rank: i, PID: 100 + i})
	}
	link := m.Connect(nil, nil)
	rd := m.Ready()
	if w := rd.Welcome; w == nil || len(w.Exits) != MaxWelcomeExits || w.Handed != MaxWelcomeExits {
		t.Fatalf("welcome %+v: want %d exits, all handed over", rd.Welcome, MaxWelcomeExits)
	}
	if len(rd.Writes) != 10 || rd.Writes[0].Exit.Rank != MaxWelcomeExits || rd.Writes[0].Link != link {
		t.Fatalf("writes %+v: want the 10 exits that did not fit, in order, on link %d", rd.Writes, link)
	}
	if s := m.Status(); len(s.Delivered) != MaxDelivered || len(s.Pending) != 0 || s.Delivered[MaxDelivered-1].Rank != n-1 {
		t.Fatalf("%d delivered (last %+v), %d pending: want the latest %d delivered, none pending", len(s.Delivered), s.Delivered[len(s.Delivered)-1], len(s.Pending), MaxDelivered)
	}
	// The next welcome repeats the delivered ones only.
	m.Connect(nil, nil)
	if rd := m.Ready(); len(rd.Welcome.Exits) != MaxDelivered || rd.Welcome.Handed != 0 {
		t.Fatalf("next welcome: %d exits, %d handed; want %d repeated", len(rd.Welcome.Exits), rd.Welcome.Handed, MaxDelivered)
	}
}

// Pending exits are bounded while no controller is connected, and a
// broken link's unwritten exits go back before the newer ones, within the
// bound.
func TestPendingExitsAreBounded(t *testing.T) {
	m := New(Config{Incarnation: 1})
	link := m.Connect(nil, nil)
	m.Exit(Exit{Job: 1, Rank: 0, PID: 1})
	m.Disconnect(link)
	for i := range MaxPending + 5 {
		m.Exit(Exit{Job: 2, Rank: i, PID: 10 + i})
	}
	m.Broken(link)
	s := m.Status()
	if len(s.Pending) != MaxPending || s.Pending[0].Job != 1 {
		t.Fatalf("%d pending, first %+v: want %d, job 1's unwritten exit first", len(s.Pending), s.Pending[0], MaxPending)
	}
}
