// Package ui is cosched's web view: a page the agents' API serves (its
// assets embedded, nothing fetched from the network at run time), the
// browser sessions that log a user in through a short-lived link, and a hub
// of server-sent events that pushes the matrix's current row and the
// cluster's state to every open page at a bounded rate.
//
// The package knows nothing of agents: node mounts Server under /ui/,
// authenticates every request as it does the API's (a session cookie is
// one more credential) and gives the hub a Source: the agent's own view of
// the slices and the cluster as the API reports it. Results serves the
// output folders of sim sweep, bench run and make demo as plots, on its
// own listener (cosched ui --results).
package ui
