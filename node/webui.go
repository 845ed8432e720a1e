package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

func (s *uiSource) State(ctx context.Context, stats bool, since api.Cursor) (ui.State, error) {
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
	var nodes api.NodesReport
	if stats {
		nodes, err = s.cl.NodesSince(ctx, ui.TimelineSlices, since) // the timeline's new records too
	} else {
		nodes, err = s.cl.Nodes(ctx, false)
	}
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

// maxOutputShown is how much of a rank's output the API returns: its end.
const maxOutputShown = 64 << 10

// apiJobOutput is GET /v1/jobs/{id}/output?rank=R[&stream=err]: the end
// of a rank's output, to the job's owner and operators. The leader checks
// who may see it and fetches it from the rank's node.
func (a *Agent) apiJobOutput(c *Controller, w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	rank, stream, ok := outputQuery(w, r)
	if !ok {
		return
	}
	ctx, cancel := callCtx(r)
	defer cancel()
	j, ok := a.accessibleJob(ctx, c, w, r, id, "see the output of")
	if !ok {
		return
	}
	if rank >= len(j.Ranks) {
		api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("rank=%d: job %d has %d ranks running or ended", rank, id, len(j.Ranks)))
		return
	}
	node := j.Ranks[rank].Node
	if node == a.cfg.Name {
		a.writeOutput(w, id, rank, stream)
		return
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	i := slices.IndexFunc(nodes, func(n api.NodeInfo) bool { return n.Name == node })
	if i < 0 || nodes[i].APIAddr == "" {
		api.WriteError(w, http.StatusServiceUnavailable, fmt.Sprintf("node %s of rank %d is not in the cluster now", node, rank))
		return
	}
	u := fmt.Sprintf("http://%s/v1/local/output/%d/%d?stream=%s", nodes[i].APIAddr, id, rank, stream)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		api.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if t := a.token(a.self()); t != "" {
		req.Header.Set("Authorization", api.AuthScheme+" "+t)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		api.WriteError(w, http.StatusBadGateway, fmt.Sprintf("node %s: %v", node, err))
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxOutputShown+4096))
}

// localJobID is the job of a /v1/local/jobs request, which only the
// agents themselves (the leader asks for a user it checked) and operators
// may make; others get 403 saying what they may not do and where to ask.
func (a *Agent) localJobID(w http.ResponseWriter, r *http.Request, refused string) (int64, bool) {
	if c := caller(r); c.UID != uint32(os.Geteuid()) && !a.isOperator(c) {
		a.authDenials.Inc()
		api.WriteError(w, http.StatusForbidden, "only the agents and operators "+refused)
		return 0, false
	}
	return a.jobID(w, r)
}

// apiLocalOutput is GET /v1/local/output/{id}/{rank}?stream=: a rank's
// output file on this agent, for the agents themselves (the leader asks
// for a user it checked) and operators.
func (a *Agent) apiLocalOutput(w http.ResponseWriter, r *http.Request) {
	id, ok := a.localJobID(w, r, "read output here: use GET /v1/jobs/ID/output")
	if !ok {
		return
	}
	rank, err := strconv.Atoi(r.PathValue("rank"))
	if err != nil || rank < 0 {
		api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("rank %q: want a rank number", r.PathValue("rank")))
		return
	}
	_, stream, ok := outputQuery(w, r)
	if !ok {
		return
	}
	a.writeOutput(w, id, rank, stream)
}

// outputQuery reads ?rank= (default 0) and ?stream= (out or err).
func outputQuery(w http.ResponseWriter, r *http.Request) (rank int, stream string, ok bool) {
	q := r.URL.Query()
	if s := q.Get("rank"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("rank=%q: want a rank number", s))
			return 0, "", false
		}
		rank = n
	}
	stream = cmp.Or(q.Get("stream"), "out")
	if stream != "out" && stream != "err" {
		api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("stream=%q: want out or err", stream))
		return 0, "", false
	}
	return rank, stream, true
}

// writeOutput answers with the end of a rank's output file here.
func (a *Agent) writeOutput(w http.ResponseWriter, id int64, rank int, stream string) {
	p := filepath.Join(a.cfg.StateDir, "jobs", strconv.FormatInt(id, 10), fmt.Sprintf("rank-%d.%s", rank, stream))
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		api.WriteError(w, http.StatusNotFound, fmt.Sprintf("job %d rank %d: no output on %s (yet)", id, rank, a.cfg.Name))
		return
	}
	if err != nil {
		api.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxOutputShown {
		_, _ = f.Seek(st.Size()-maxOutputShown, io.SeekStart)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.Copy(w, io.LimitReader(f, maxOutputShown))
}

// apiJobLive is GET /v1/jobs/{id}/live: what the job's ranks do now and
// its cgroups' figures, node by node, to its owner and operators. The
// leader asks each of the job's nodes at once; a node that does not
// answer has its error in its part.
func (a *Agent) apiJobLive(c *Controller, w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	ctx, cancel := callCtx(r)
	defer cancel()
	j, ok := a.accessibleJob(ctx, c, w, r, id, "see the ranks of")
	if !ok {
		return
	}
	live := api.JobLive{ID: id, State: j.State, Nodes: []api.NodeLive{}}
	if j.State != api.Running {
		api.WriteJSON(w, http.StatusOK, live)
		return
	}
	var names []string
	for _, n := range j.Nodes {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	live.Nodes = make([]api.NodeLive, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			k := slices.IndexFunc(nodes, func(n api.NodeInfo) bool { return n.Name == name })
			if name == a.cfg.Name {
				live.Nodes[i] = a.localJobLive(id)
				return
			}
			if k < 0 || nodes[k].APIAddr == "" {
				live.Nodes[i] = api.NodeLive{Node: name, Error: "not in the cluster now"}
				return
			}
			cl := api.NewClient(nodes[k].APIAddr)
			cl.Token = func() (string, error) { return a.token(a.self()), nil }
			l, err := cl.LocalJobLive(ctx, id)
			if err != nil {
				l = api.NodeLive{Node: name, Error: err.Error()}
			}
			live.Nodes[i] = l
		})
	}
	wg.Wait()
	api.WriteJSON(w, http.StatusOK, live)
}

// apiLocalJobLive is GET /v1/local/jobs/{id}/live: this agent's part of
// a job now, for the agents themselves (the leader asks for a user it
// checked) and operators.
func (a *Agent) apiLocalJobLive(w http.ResponseWriter, r *http.Request) {
	id, ok := a.localJobID(w, r, "read a node's part of a job here: use GET /v1/jobs/ID/live")
	if !ok {
		return
	}
	api.WriteJSON(w, http.StatusOK, a.localJobLive(id))
}

// localJobLive reads the job's ranks here from the switcher and its
// figures from its cgroup.
func (a *Agent) localJobLive(id int64) api.NodeLive {
	l := api.NodeLive{Node: a.cfg.Name, At: time.Now(), Ranks: []api.RankLive{}}
	ranks, row := a.sw.rankStates(id)
	if ranks != nil {
		l.Ranks = ranks
	}
	l.Row = row
	if a.follower != nil {
		l.Seq, _ = a.follower.Current()
	}
	if a.cg != nil {
		if j := a.cg.Job(id); j != nil {
			if st, err := j.Stats(); err == nil {
				l.Cgroup = true
				l.CPUTime.D, l.Memory, l.PeakMemory, l.Processes = st.CPUTime, st.Memory, st.PeakMemory, st.Processes
			} else {
				l.Error = err.Error()
			}
		}
	}
	return l
}
