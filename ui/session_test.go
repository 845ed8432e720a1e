package ui

import (
	"errors"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A login token is spent by its first exchange and dies at LoginTTL; a
// session lives SessionTTL, and End forgets it.
func TestSessionsLoginOnceExpiry(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s := NewSessions(clk.now)
	alice := Identity{UID: 1000, GID: 100}

	tok, err := s.NewLogin(alice)
	if err != nil {
		t.Fatal(err)
	}
	id, who, exp, err := s.Exchange(tok)
	if err != nil || who != alice || !exp.Equal(clk.now().Add(DefaultSessionTTL)) {
		t.Fatalf("exchange: %q %v %v %v", id, who, exp, err)
	}
	if _, _, _, err := s.Exchange(tok); !errors.Is(err, ErrBadLogin) {
		t.Errorf("second exchange of one token: %v, want ErrBadLogin", err)
	}
	if got, ok := s.Lookup(id); !ok || got != alice {
		t.Errorf("lookup: %v %v", got, ok)
	}
	if _, ok := s.Lookup("forged"); ok {
		t.Error("an unknown session id was accepted")
	}

	late, _ := s.NewLogin(alice)
	clk.add(DefaultLoginTTL)
	if _, _, _, err := s.Exchange(late); !errors.Is(err, ErrBadLogin) {
		t.Errorf("token exchanged at its expiry: %v", err)
	}

	clk.add(DefaultSessionTTL - DefaultLoginTTL - time.Second)
	if _, ok := s.Lookup(id); !ok {
		t.Error("session gone a second before its expiry")
	}
	clk.add(time.Second)
	if _, ok := s.Lookup(id); ok {
		t.Error("session alive at its expiry")
	}

	tok2, _ := s.NewLogin(alice)
	id2, _, _, _ := s.Exchange(tok2)
	s.End(id2)
	if _, ok := s.Lookup(id2); ok {
		t.Error("session alive after End")
	}
}

// Unspent logins are bounded: a flood forgets the oldest first.
func TestSessionsBounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s := NewSessions(clk.now)
	first, _ := s.NewLogin(Identity{UID: 1})
	for range maxLogins {
		clk.add(time.Millisecond)
		if _, err := s.NewLogin(Identity{UID: 2}); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	n := len(s.logins)
	s.mu.Unlock()
	if n > maxLogins {
		t.Errorf("%d logins kept, bound %d", n, maxLogins)
	}
	if _, _, _, err := s.Exchange(first); err == nil {
		t.Error("the oldest login survived the flood")
	}
}
