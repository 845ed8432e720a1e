package ui

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"time"
)

// Identity is who a browser session belongs to: the user the API took the
// caller of POST /v1/ui/login for.
type Identity struct {
	UID, GID uint32
}

// Default lifetimes: a login link is for the next few seconds (it travels
// in a URL, so it may land in a shell's history); a session is a working
// day's.
const (
	DefaultLoginTTL   = 60 * time.Second
	DefaultSessionTTL = 12 * time.Hour
)

// Bounds on what an agent keeps: a flood of logins cannot exhaust its
// memory (the oldest are forgotten first).
const (
	maxLogins   = 1024
	maxSessions = 4096
)

// CookieName is the session cookie's name for a page reached at host (the
// request's Host): "cosched_session_PORT". Browsers keep cookies per host
// name, not per port, and the agents of a local cluster share one host: a
// name per port keeps each agent's session apart.
func CookieName(host string) string {
	port := "80"
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		port = host[i+1:]
	}
	return "cosched_session_" + port
}

// ErrBadLogin is any login token that is unknown, already used or expired:
// the page says to ask for a fresh link, whatever the cause.
var ErrBadLogin = errors.New("ui: login link unknown, already used or expired: run `cosched ui --url` again")

type grant struct {
	who     Identity
	expires time.Time
}

// Sessions holds login tokens (single use, short-lived) and the browser
// sessions they were exchanged for. Both are random bearer secrets known
// only to this agent: nothing derived from the cluster key reaches a
// browser. Safe for concurrent use.
type Sessions struct {
	LoginTTL, SessionTTL time.Duration

	now      func() time.Time
	mu       sync.Mutex
	logins   map[string]grant
	sessions map[string]grant
}

// NewSessions returns an empty store reading the time from now (time.Now
// when nil).
func NewSessions(now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{LoginTTL: DefaultLoginTTL, SessionTTL: DefaultSessionTTL, now: now,
		logins: map[string]grant{}, sessions: map[string]grant{}}
}

// NewLogin mints a login token for who, valid once within LoginTTL.
func (s *Sessions) NewLogin(who Identity) (string, error) {
	tok, err := secret()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	prune(s.logins, now, maxLogins)
	s.logins[tok] = grant{who: who, expires: now.Add(s.LoginTTL)}
	return tok, nil
}

// Exchange spends a login token for a new session: its id (the cookie's
// value), whose it is and until when.
func (s *Sessions) Exchange(token string) (id string, who Identity, expires time.Time, err error) {
	s.mu.Lock()
	g, ok := s.logins[token]
	delete(s.logins, token) // spent even when expired
	s.mu.Unlock()
	now := s.now()
	if !ok || !now.Before(g.expires) {
		return "", Identity{}, time.Time{}, ErrBadLogin
	}
	id, err = secret()
	if err != nil {
		return "", Identity{}, time.Time{}, err
	}
	expires = now.Add(s.SessionTTL)
	s.mu.Lock()
	defer s.mu.Unlock()
	prune(s.sessions, now, maxSessions)
	s.sessions[id] = grant{who: g.who, expires: expires}
	return id, g.who, expires, nil
}

// Lookup returns the identity of a live session.
func (s *Sessions) Lookup(id string) (Identity, bool) {
	if id == "" {
		return Identity{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.sessions[id]
	if !ok {
		return Identity{}, false
	}
	if !s.now().Before(g.expires) {
		delete(s.sessions, id)
		return Identity{}, false
	}
	return g.who, true
}

// End forgets a session (logout).
func (s *Sessions) End(id string) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
}

// prune drops expired grants and, at the bound, the one closest to expiry.
func prune(m map[string]grant, now time.Time, bound int) {
	for k, g := range m {
		if !now.Before(g.expires) {
			delete(m, k)
		}
	}
	for len(m) >= bound {
		var oldest string
		var at time.Time
		for k, g := range m {
			if oldest == "" || g.expires.Before(at) {
				oldest, at = k, g.expires
			}
		}
		delete(m, oldest)
	}
}

func secret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", errors.New("ui: no randomness for a secret: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
