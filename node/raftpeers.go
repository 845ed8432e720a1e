package node

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/journal"
)

// The operator's view of the controllers' raft group (Nomad's and
// Consul's `operator raft list-peers` / `remove-peer`): served by the
// leader, forwarded there by the other agents, for operators only.

// operatorOnly answers 403 unless the caller is an operator, and 409 on
// a controller without a raft group; it returns the group otherwise.
func (a *Agent) operatorOnly(w http.ResponseWriter, r *http.Request, what string) (*controlGroup, bool) {
	if !a.isOperator(caller(r)) {
		a.authDenials.Inc()
		api.WriteError(w, http.StatusForbidden, fmt.Sprintf("only an operator (root%s) may %s", a.adminGroupNote(), what))
		return nil, false
	}
	if a.group == nil {
		api.WriteError(w, http.StatusConflict, "this cluster's controller keeps its journal outside a raft group: it has no peers")
		return nil, false
	}
	return a.group, true
}

// alive is the set of agents this agent's gossip sees now.
func (a *Agent) alive() map[string]bool {
	a.mu.Lock()
	ml := a.ml
	a.mu.Unlock()
	out := map[string]bool{}
	for _, m := range ml.Members() {
		out[m.Name] = true
	}
	return out
}

// apiRaftPeers is GET /v1/operator/raft/peers: the group's servers.
func (a *Agent) apiRaftPeers(_ *Controller, w http.ResponseWriter, r *http.Request) {
	g, ok := a.operatorOnly(w, r, "list the controllers' raft group")
	if !ok {
		return
	}
	ctx, cancel := callCtx(r)
	defer cancel()
	servers, err := g.Journal().Servers(ctx)
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	leader, alive := g.Journal().Leader().ID, a.alive()
	out := api.RaftPeers{Servers: []api.RaftServer{}}
	for _, s := range servers {
		out.Servers = append(out.Servers, api.RaftServer{Name: s.ID, Address: s.Addr, Voter: s.Voter, Leader: s.ID == leader, Alive: alive[s.ID]})
	}
	api.WriteJSON(w, http.StatusOK, out)
}

// apiRemoveRaftPeer is DELETE /v1/operator/raft/peers/{name}: the
// controller leaves the group. An agent gossip sees alive is refused: the
// leader would add it back at once (stop it first).
func (a *Agent) apiRemoveRaftPeer(_ *Controller, w http.ResponseWriter, r *http.Request) {
	g, ok := a.operatorOnly(w, r, "remove a controller from the raft group")
	if !ok {
		return
	}
	name := r.PathValue("name")
	if name != a.cfg.Name && a.alive()[name] {
		api.WriteError(w, http.StatusConflict, fmt.Sprintf("controller %s is alive (gossip sees its agent): stop its agent first, or the leader adds it back", name))
		return
	}
	ctx, cancel := callCtx(r)
	defer cancel()
	err := g.Remove(ctx, name)
	switch {
	case err == nil:
		a.controllersRemoved.WithLabelValues("operator").Inc()
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, errUnknownPeer):
		api.WriteError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, errRemoveLeader):
		api.WriteError(w, http.StatusConflict, err.Error())
	case errors.Is(err, journal.ErrNotLeader):
		// Leadership moved while the request came: the client repeats it.
		w.Header().Set("Retry-After", "1")
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
	default:
		api.WriteError(w, http.StatusServiceUnavailable, err.Error())
	}
}
