package api

import (
	"context"
	"net/http"
	"net/url"
)

// RaftServer is one of the controllers' raft group (the journal's
// servers), as `cosched operator raft list-peers` shows it.
type RaftServer struct {
	Name    string `json:"name"`    // the controller agent's name: its id in the group
	Address string `json:"address"` // the journal's raft address
	Voter   bool   `json:"voter"`   // counts toward the majority
	Leader  bool   `json:"leader"`  // leads the group (runs the controller)
	// Alive: the leader's gossip sees the agent. A voter that is not
	// alive still counts toward the majority until it is removed.
	Alive bool `json:"alive"`
}

// RaftPeers is the group's latest configuration.
type RaftPeers struct {
	Servers []RaftServer `json:"servers"`
}

// RaftPeers lists the controllers' raft group (operators only: root or
// members of the agents' admin group).
func (c *Client) RaftPeers(ctx context.Context) ([]RaftServer, error) {
	var p RaftPeers
	err := c.do(ctx, http.MethodGet, "/v1/operator/raft/peers", nil, &p)
	return p.Servers, err
}

// RemoveRaftPeer removes the controller name from the raft group, so it
// no longer counts toward the majority (operators only). The leader
// refuses to remove itself, an unknown name, and an agent gossip sees
// alive (the leader would add it back).
func (c *Client) RemoveRaftPeer(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/operator/raft/peers/"+url.PathEscape(name), nil, nil)
}
