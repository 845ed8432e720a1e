package ui

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"
)

//go:embed assets
var assets embed.FS

// Me is the page's user, as the API authenticated them.
type Me struct {
	UID      uint32 `json:"uid"`
	User     string `json:"user"`
	Operator bool   `json:"operator"` // may see and cancel every job
	Via      string `json:"via"`      // how the agent knows: session, unix socket, token, unauthenticated
}

// Server serves the page under /ui/. Its caller authenticates every
// request but /ui/login (LoginPath) before it reaches Server, as it does
// the API's; Who says who that was.
type Server struct {
	Sessions *Sessions
	Hub      *Hub
	Who      func(r *http.Request) Me
	// KeepAlive is how often an idle event stream gets a comment line, so
	// that proxies and the browser keep it open (default 15 s).
	KeepAlive time.Duration
}

// MaxStreams bounds the event streams one agent serves (each costs a
// goroutine, a connection and a write per event).
const MaxStreams = 256

// writeTimeout bounds one write to an event stream.
const writeTimeout = 10 * time.Second

// LoginPath exchanges a login token for a session cookie: the only path
// under /ui/ served without a credential.
const LoginPath = "/ui/login"

// CSRFHeader must accompany every request that changes something (cancel)
// made with the session cookie: a page of another site cannot send it
// without the agent's consent (a CORS preflight the API never grants).
const CSRFHeader = "X-Cosched-UI"

// Handler routes /ui/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		secureHeaders(w)
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secureHeaders(w)
		files.ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET "+LoginPath, s.login)
	mux.HandleFunc("GET /ui/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(s.Who(r))
	})
	mux.HandleFunc("POST /ui/logout", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(CookieName(r.Host)); err == nil {
			s.Sessions.End(c.Value)
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName(r.Host), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /ui/events", s.events)
	// The full timeline, for a page that missed a timeline event (a
	// gap in their numbers): authenticated like the stream itself.
	mux.HandleFunc("GET /ui/timeline", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(s.Hub.Timeline())
	})
	return mux
}

func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	// Nothing but this agent's own files: no CDN, no inline script.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	id, _, expires, err := s.Sessions.Exchange(r.URL.Query().Get("token"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName(r.Host), Value: id, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	// Off the URL that carried the token: a reload cannot spend it again.
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// events is the page's stream: "state" events (State as JSON), "timeline"
// events (TimelineEvent) and "slice" events ({"seq":N,"row":R}).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	if s.Hub.Subscribers() >= MaxStreams {
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("this agent already serves %d event streams: close some pages, or open the page on another agent", MaxStreams), http.StatusServiceUnavailable)
		return
	}
	sub, leave := s.Hub.Subscribe()
	defer leave()
	// A page that stops reading (a suspended laptop) must not hold a
	// goroutine for ever: a write that cannot finish in writeTimeout ends
	// its stream, and the browser reconnects.
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.Write(b)
		return err == nil
	}
	// A reconnecting page (agent restart, failover) retries after 1 s.
	if !write([]byte("retry: 1000\n\n")) {
		return
	}
	fl.Flush()
	every := s.KeepAlive
	if every <= 0 {
		every = 15 * time.Second
	}
	keep := time.NewTicker(every)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.Hub.Done():
			return
		case <-keep.C:
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
		case <-sub.Wake():
			for _, ev := range sub.Take() {
				if !write(ev) {
					return
				}
			}
		}
		fl.Flush()
	}
}
