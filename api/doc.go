// Package api is cosched's job API as a client sees it: the requests and
// answers of every agent's HTTP API (JobSpec, Job, NodesReport, the
// statistics), the Client that calls it (through any agent, retrying
// others and "retry later" answers during a failover, with a cluster-key
// token or over an agent's Unix socket), and its typed errors (Error,
// NotAgentError).
//
// It imports nothing of the agent: a program that submits jobs or reads
// their records (the CLI's client commands, localcluster, bench/experiment)
// links neither memberlist nor the relays nor Prometheus, as Nomad's api
// package stands apart from its agent. The agent (package node) serves it,
// and the controller's state machine (node/ctl) keeps its job table in its
// types.
package api
