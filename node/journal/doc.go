// Package journal is the controller's durable, replicated log: opaque
// entries appended by the leader of a raft group (hashicorp/raft), each
// batch committed on a majority's disks before Append returns, delivered in
// order to the owner's FSM on every server, and compacted through owner
// snapshots so the log stays bounded.
//
// A lone controller is a group of one, bootstrapped in its directory;
// standby controllers are more voters. The payload is the owner's: this
// package never looks inside an entry.
//
// On disk, a journal's directory holds raft.db (one bbolt file: the log,
// each record checksummed, and raft's term and vote) and snapshots/ (raft's
// file snapshot store: meta.json and state.bin, CRC-64 checked). Open checks
// all of it before raft runs: a damaged journal fails with an error naming
// the file and the damage, never an empty state.
//
// Order of effects: Append encodes the batch, raft writes it to the
// leader's log (fsync), replicates it, and once a majority has it on disk
// the batch is committed, applied to the leader's FSM, and Append returns;
// followers apply it when they learn the commit index. FSM calls come from
// one goroutine, in log order.
package journal
