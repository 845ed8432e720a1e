package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cosched/cosched/node/ctl"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/strobe"
)

// maxBody bounds a request body (a job spec is a few hundred bytes).
const maxBody = 1 << 20

// routes is the HTTP API every agent serves. The controller answers the
// /v1 job and node calls itself; other agents forward them to it.
func (a *Agent) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", a.withController(a.apiSubmit))
	mux.HandleFunc("GET /v1/jobs", a.withController(a.apiJobs))
	mux.HandleFunc("GET /v1/jobs/{id}", a.withController(a.apiJob))
	mux.HandleFunc("DELETE /v1/jobs/{id}", a.withController(a.apiCancel))
	mux.HandleFunc("GET /v1/nodes", a.withController(a.apiNodes))
	mux.HandleFunc("GET /v1/operator/raft/peers", a.withController(a.apiRaftPeers))
	mux.HandleFunc("DELETE /v1/operator/raft/peers/{name}", a.withController(a.apiRemoveRaftPeer))
	mux.HandleFunc("GET /v1/local/stats", a.apiLocalStats)
	if a.ui != nil { // an Agent{} of the routing tests has none
		mux.HandleFunc("POST /v1/ui/login", a.apiUILogin)
		mux.HandleFunc("GET /v1/jobs/{id}/output", a.withController(a.apiJobOutput))
		mux.HandleFunc("GET /v1/local/output/{id}/{rank}", a.apiLocalOutput)
		mux.HandleFunc("GET /v1/jobs/{id}/live", a.withController(a.apiJobLive))
		mux.HandleFunc("GET /v1/local/jobs/{id}/live", a.apiLocalJobLive)
		mux.Handle("/ui/", a.ui.server.Handler())
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A known path with another method is 405 with the methods it
		// takes (RFC 9110), not an unknown endpoint.
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			api.WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		api.WriteError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// allowedMethods lists the methods that mux routes r's path with to a
// handler other than the catch-all "/".
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host}
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// forwardedHeader marks a request an agent forwarded to the leader: the
// receiver does not forward it again (two agents with different ideas of
// the leader would otherwise pass it back and forth).
const forwardedHeader = "X-Cosched-Forwarded"

// withController serves h on the agent whose controller leads and forwards
// elsewhere, to the leader.
func (a *Agent) withController(h func(*Controller, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := a.controller(); c != nil {
			h(c, w, r)
			return
		}
		target := a.leaderAPI()
		a.mu.Lock()
		self := a.meta.APIAddr
		a.mu.Unlock()
		if target == "" || target == self || r.Header.Get(forwardedHeader) != "" {
			// Not acted on: a client may repeat it (Retry-After), e.g.
			// once an election is over.
			w.Header().Set("Retry-After", "1")
			api.WriteError(w, http.StatusServiceUnavailable, "no controller leads yet (an election may be in progress)")
			return
		}
		// The controller trusts this agent's word (it holds the key) on
		// who the caller is, however the caller reached it.
		r = r.Clone(r.Context())
		r.Header.Del("Authorization")
		r.Header.Del("Cookie") // a web session lives on this agent only
		if t := a.token(caller(r)); t != "" {
			r.Header.Set("Authorization", api.AuthScheme+" "+t)
		}
		r.Header.Set(forwardedHeader, a.cfg.Name)
		a.proxyTo(target).ServeHTTP(w, r)
	}
}

// proxies caches one reverse proxy per controller address.
type proxies struct {
	mu sync.Mutex
	by map[string]*httputil.ReverseProxy
}

func (a *Agent) proxyTo(addr string) *httputil.ReverseProxy {
	a.proxies.mu.Lock()
	defer a.proxies.mu.Unlock()
	if p, ok := a.proxies.by[addr]; ok {
		return p
	}
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			// The request never reached the controller: it may be repeated
			// (e.g. once another controller leads).
			w.Header().Set("Retry-After", "1")
			api.WriteError(w, http.StatusServiceUnavailable, "controller at "+addr+" unreachable: "+err.Error())
			return
		}
		api.WriteError(w, http.StatusBadGateway, "controller at "+addr+" unreachable: "+err.Error())
	}
	if a.proxies.by == nil {
		a.proxies.by = map[string]*httputil.ReverseProxy{}
	}
	a.proxies.by[addr] = p
	return p
}

// callCtx bounds a call into the controller's loop.
func callCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Second)
}

func (a *Agent) apiSubmit(c *Controller, w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	var spec api.JobSpec
	if err := dec.Decode(&spec); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			api.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
			return
		}
		api.WriteError(w, http.StatusBadRequest, "malformed job spec: "+err.Error())
		return
	}
	if dec.More() {
		api.WriteError(w, http.StatusBadRequest, "malformed job spec: more than one JSON value")
		return
	}
	owner := ownerOf(caller(r))
	if why := mayRunAs(owner); why != "" {
		a.authDenials.Inc()
		api.WriteError(w, http.StatusForbidden, fmt.Sprintf("user %s: %s", owner.User, why))
		return
	}
	spec.Owner, spec.User = &owner, owner.User // never the client's word
	ctx, cancel := callCtx(r)
	defer cancel()
	id, err := c.Submit(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			api.WriteError(w, http.StatusServiceUnavailable, "controller busy: "+err.Error())
			return
		}
		if errors.Is(err, ErrStopped) {
			api.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		if errors.Is(err, ctl.ErrNoAgents) {
			// The agents re-register within a heartbeat or two of a start
			// or failover; the client repeats it.
			w.Header().Set("Retry-After", "1")
			api.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		api.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	api.WriteJSON(w, http.StatusCreated, api.Submitted{ID: id})
}

func (a *Agent) apiJobs(c *Controller, w http.ResponseWriter, r *http.Request) {
	all, _ := strconv.ParseBool(r.URL.Query().Get("all"))
	ctx, cancel := callCtx(r)
	defer cancel()
	jobs, err := c.Jobs(ctx, all)
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if jobs == nil {
		jobs = []api.Job{}
	}
	// Everyone sees the queue; only owners and operators see what a job
	// runs and where its output goes.
	who := caller(r)
	for i := range jobs {
		if !a.mayAccess(who, jobs[i].Spec.Owner) {
			jobs[i].Spec.Command, jobs[i].Spec.Dir, jobs[i].Ranks = nil, "", nil
		}
		// Large, and may hold secrets: only GET /v1/jobs/ID shows it.
		jobs[i].Spec.Env = nil
	}
	api.WriteJSON(w, http.StatusOK, jobs)
}

func (a *Agent) jobID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := api.ParseJobID(r.PathValue("id"))
	if err != nil {
		api.WriteError(w, http.StatusBadRequest, err.Error())
		return 0, false
	}
	return id, true
}

func (a *Agent) apiJob(c *Controller, w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	ctx, cancel := callCtx(r)
	defer cancel()
	j, ok := a.accessibleJob(ctx, c, w, r, id, "see")
	if ok {
		api.WriteJSON(w, http.StatusOK, j)
	}
}

// accessibleJob fetches job id if the caller may act on it; otherwise it
// answers 404, 403 or 503 itself.
func (a *Agent) accessibleJob(ctx context.Context, c *Controller, w http.ResponseWriter, r *http.Request, id int64, what string) (api.Job, bool) {
	j, err := c.Job(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		api.WriteError(w, http.StatusNotFound, err.Error())
	case err != nil:
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
	case !a.mayAccess(caller(r), j.Spec.Owner):
		a.forbidden(w, id, j.Spec.Owner, what)
	default:
		return j, true
	}
	return j, false
}

func (a *Agent) apiCancel(c *Controller, w http.ResponseWriter, r *http.Request) {
	id, ok := a.jobID(w, r)
	if !ok {
		return
	}
	ctx, cancel := callCtx(r)
	defer cancel()
	if _, ok := a.accessibleJob(ctx, c, w, r, id, "cancel"); !ok {
		return
	}
	err := c.Cancel(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		api.WriteError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrEnded):
		api.WriteError(w, http.StatusConflict, err.Error())
	case err != nil:
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
	default:
		api.WriteJSON(w, http.StatusOK, api.Submitted{ID: id})
	}
}

func (a *Agent) apiNodes(c *Controller, w http.ResponseWriter, r *http.Request) {
	ctx, cancel := callCtx(r)
	defer cancel()
	nodes, err := c.Nodes(ctx)
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	// Agents without processors (controller-only ones) are not the
	// controller's business; gossip knows them.
	a.mu.Lock()
	ml := a.ml
	a.mu.Unlock()
	for _, m := range ml.Members() {
		if m.CPUs == 0 && !slices.ContainsFunc(nodes, func(n api.NodeInfo) bool { return n.Name == m.Name }) {
			nodes = append(nodes, api.NodeInfo{Name: m.Name, State: "up", Controller: m.Controller, APIAddr: m.APIAddr})
		}
	}
	slices.SortFunc(nodes, func(x, y api.NodeInfo) int { return strings.Compare(x.Name, y.Name) })
	for i := range nodes {
		nodes[i].Leader = nodes[i].Name == a.cfg.Name // this agent's controller answers: it leads
	}
	rep := api.NodesReport{Nodes: nodes}
	// ?records=N keeps each agent's last N slice records in its stats
	// (the web page's timeline); ?since=CURSOR only those after the
	// cursor's, per agent (api.Cursor), all of them by default.
	q := r.URL.Query()
	keep := 0
	var since api.Cursor
	if q.Has("since") {
		var err error
		if since, err = api.ParseCursor(q.Get("since")); err != nil {
			api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("since=%q: %v (pass back the last report's cursor, or nothing)", q.Get("since"), err))
			return
		}
		keep = api.MaxRecords
	}
	if s := q.Get("records"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > api.MaxRecords {
			api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("records=%q: want a number of slices from 0 to %d", s, api.MaxRecords))
			return
		}
		keep = n
	}
	if want, _ := strconv.ParseBool(q.Get("stats")); want {
		cs, err := c.Stats(ctx)
		if err != nil {
			api.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		rep.Cluster = &cs
		rep.Skew, rep.Cursor = a.nodeStats(ctx, rep.Nodes, keep, since)
	}
	api.WriteJSON(w, http.StatusOK, rep)
}

// nodeStats asks every agent up for its statistics, one after the other, and puts
// them in nodes, each with its last keep slice records, and returns the
// skew across them. With a cursor (since non-nil) an agent sends only the
// records after the cursor's for it, and the skew is over those; the
// cursor returned names, per agent, the newest record the reader now
// has (the one it had for an agent that did not answer: asked again next
// time, nothing is skipped). Without one, each agent sends all it keeps
// (the skew over its History).
func (a *Agent) nodeStats(ctx context.Context, nodes []api.NodeInfo, keep int, since api.Cursor) (*strobe.SkewStats, string) {
	records := make([][]strobe.SliceRecord, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		if n.State != "up" || n.APIAddr == "" {
			continue
		}
		cl := api.NewClient(n.APIAddr)
		cl.Token = func() (string, error) { return a.token(a.self()), nil }
		st, err := cl.LocalStatsAfter(ctx, since[n.Name])
		if err != nil {
			a.log.Warn("node stats", zap.String("node", n.Name), zap.Error(err))
			continue
		}
		records[i] = st.Records
		st.Records = st.Records[max(0, len(st.Records)-keep):]
		if keep == 0 {
			st.Records = nil
		}
		n.Stats = &st
	}
	byNode := map[string][]strobe.SliceRecord{}
	for i, recs := range records {
		byNode[nodes[i].Name] = recs
	}
	skew := strobe.Skew(byNode)
	if since == nil {
		return &skew, ""
	}
	next := maps.Clone(since)
	for _, n := range nodes {
		if n.Stats != nil && len(n.Stats.Records) > 0 {
			next[n.Name] = api.IDOf(n.Stats.Records[len(n.Stats.Records)-1])
		}
	}
	return &skew, next.String()
}

// apiLocalStats is GET /v1/local/stats[?since=SEQ]: this agent's strobe
// statistics and its per-slice records (only those after slice SEQ).
func (a *Agent) apiLocalStats(w http.ResponseWriter, r *http.Request) {
	// since=SEQ: the records of slices after SEQ, whatever their epoch;
	// since=EPOCH.SEQ: those after that one (api.RecordID's order), which
	// a controller failover does not disturb.
	var after func(strobe.SliceRecord) bool
	if s := r.URL.Query().Get("since"); strings.Contains(s, ".") {
		id, err := api.ParseRecordID(s)
		if err != nil {
			api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("since=%v", err))
			return
		}
		after = func(rec strobe.SliceRecord) bool { return api.IDOf(rec).Compare(id) > 0 }
	} else {
		var since uint64
		if s != "" {
			var err error
			if since, err = strconv.ParseUint(s, 10, 64); err != nil {
				api.WriteError(w, http.StatusBadRequest, fmt.Sprintf("since=%q: not a slice number (SEQ or EPOCH.SEQ)", s))
				return
			}
		}
		after = func(rec strobe.SliceRecord) bool { return rec.Seq > since }
	}
	st := api.NodeStats{Realtime: a.realtimeStatus(), Relay: api.RelayStats(a.relay.Stats()), SlotReuses: a.sw.slotReuses(),
		Lends: a.sw.slotLends(), Cgroups: a.cg.Status(), Suspend: a.suspendStatus()}
	if a.follower != nil {
		st.Strobe = a.follower.Stats()
		for _, rec := range a.follower.Records() {
			if after(rec) {
				st.Records = append(st.Records, rec)
			}
		}
	}
	api.WriteJSON(w, http.StatusOK, st)
}

func (a *Agent) realtimeStatus() string {
	if a.cfg.Priority == 0 {
		return "normal (real-time priority turned off)"
	}
	rt, ok := a.udp.(*strobe.RealtimeUDP)
	if !ok {
		return "normal"
	}
	if err := rt.RealtimeError(); err != nil {
		return "normal (" + err.Error() + ")"
	}
	if mc, ok := a.mcUDP.(*strobe.RealtimeUDP); ok {
		if err := mc.RealtimeError(); err != nil {
			return "normal for multicast strobes (" + err.Error() + ")"
		}
	}
	return fmt.Sprintf("SCHED_FIFO %d", a.cfg.Priority)
}
