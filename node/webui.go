package node

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/ui"
)

// webUI is the agent's web page (package ui): its sessions, its hub of
// events, and the client the hub reads the cluster through.
type webUI struct {
	sessions *ui.Sessions
	hub      *ui.Hub
	server   *ui.Server
}

func (a *Agent) newWebUI() *webUI {
	w := &webUI{sessions: ui.NewSessions(nil)}
	w.hub = ui.NewHub(&uiSource{a: a}, ui.HubConfig{})
	w.server = &ui.Server{Sessions: w.sessions, Hub: w.hub, Who: func(r *http.Request) ui.Me {
		c := caller(r)
		return ui.Me{UID: c.UID, User: ownerOf(c).User, Operator: a.isOperator(c), Via: c.Via}
	}}
	return w
}

// uiSource is what the page's hub reads: this agent's last strobe, and the
// cluster through the API like any client (forwarded to the leader, tried
// elsewhere through a failover).
type uiSource struct {
	a    *Agent
	once sync.Once
	cl   *api.Client
}

func (s *uiSource) Slice() (uint64, int) {
	if s.a.follower == nil {
		return 0, 0
	}
	return s.a.follower.Current()
}

func (s *uiSource) State(ctx context.Context, stats bool) (ui.State, error) {
	s.once.Do(func() {
		s.a.mu.Lock()
		addr := s.a.meta.APIAddr
		s.a.mu.Unlock()
		s.cl = api.NewClient(addr)
		s.cl.Token = func() (string, error) { return s.a.token(s.a.self()), nil }
	})
	jobs, err := s.cl.Jobs(ctx, false)
	if err != nil {
		return ui.State{}, err
	}
	nodes, err := s.cl.Nodes(ctx, stats)
	if err != nil {
		return ui.State{}, err
	}
	return ui.State{Jobs: jobs, Nodes: nodes}, nil
}

// apiUILogin is POST /v1/ui/login: a link to this agent's page that logs a
// browser in as the caller (a single-use token, ui.DefaultLoginTTL).
func (a *Agent) apiUILogin(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	if c.Via == viaSession {
		a.authDenials.Inc()
		api.WriteError(w, http.StatusForbidden, "a web session cannot make login links: run `cosched ui --url` as yourself")
		return
	}
	tok, err := a.ui.sessions.NewLogin(ui.Identity{UID: c.UID, GID: c.GID})
	if err != nil {
		api.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	a.mu.Lock()
	addr := a.meta.APIAddr
	a.mu.Unlock()
	u := url.URL{Scheme: "http", Host: addr, Path: ui.LoginPath, RawQuery: url.Values{"token": {tok}}.Encode()}
	api.WriteJSON(w, http.StatusOK, api.UILogin{URL: u.String(), Expires: time.Now().Add(a.ui.sessions.LoginTTL)})
}
