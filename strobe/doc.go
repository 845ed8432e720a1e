// Package strobe is cosched's slice clock: the controller's strobes and the
// agents' heartbeat total exchange. Cluster membership (memberlist
// gossip) is package member.
//
// # Roles
//
// One agent is the controller. Every slice δ (50 ms by default, down to
// 1 ms) its loop takes a Tick from a Ticker, asks the scheduler core for
// the row, and calls Sender.Strobe, which sends
// STROBE{epoch, slice k, row, member epoch, sent time} to every agent. Each
// agent's Follower applies the strobe (calls its SwitchFunc: stop the old
// row's processes, continue the new row's), stamps the switch, and sends a
// HEARTBEAT to its peers (SetPeers: agents give the roots of their
// jobs, where BCS's control data is gathered), on one slice in a
// liveness period to the liveness peers (SetLivenessPeers: the
// controller-eligible agents), and, on a single socket, to the strobe's
// source. Whoever collects the
// agents' Records computes the cluster's switch skew with Skew.
//
// Membership (package member) is for discovery and liveness only:
// failure detection takes seconds and gossip is no barrier. Strobes and
// heartbeats use their own UDP sockets (Transport), and membership changes
// reach the slice clock only at slice boundaries: the controller changes
// its target list and MemberEpoch between strobes, and an agent's
// SetPeers takes effect at its next applied strobe.
//
// # Wire format
//
// Every message is msgpack: an envelope array [version, type, body], where
// body is a map keyed by short field names; with a cluster key the whole
// message is sealed (version 2, below). Decoders skip envelope
// elements beyond the third (reserved for additions) and unknown body
// keys, so adding an optional field needs no new version; changing a
// field's meaning does. A packet of another version or an unknown type is
// dropped and counted (Stats.Unknown), a malformed one likewise
// (Stats.Malformed): never a crash. Packets are at most MaxPacketSize
// bytes (8192; see there); a heartbeat whose data does not fit is split
// into parts and reassembled by the receiver (split.go), never dropped.
// k/fw and pi/pn were appended within version 1: a build without them
// ignores the keys, so it neither forwards strobes (the controller's
// --strobe-fanout needs every agent to have this build) nor reassembles
// (it sees each part's liveness and a piece of data it cannot decode).
//
//	version 1 (unsealed: no cluster key)
//
//	type  message    keys (field)
//	0     invalid    never sent
//	1     Strobe     e Epoch, s Seq, r Row, me MemberEpoch, t SentMono,
//	                 d DueMono, k Fanout, fw Forward (fan-out tree)
//	2     Heartbeat  f From, e Epoch, s Seq, rt RecvMono, wt SwitchedMono,
//	                 wc SwitchCost, lo Lost, la Late, d Data,
//	                 pi Part, pn Parts (a heartbeat split across packets)
//	3     reserved   membership metadata (package member's Meta, in the
//	                 same envelope; never on the strobe socket: counted Unknown)
//
// Type numbers and keys are append-only: never renumber or reuse one.
//
//	version 2 (ProtocolVersion: sealed with the cluster key, auth.go)
//
//	"cK" 2 | sender id (8 bytes) | sequence (8 bytes) | a version-1
//	message stamped version 2 | HMAC-SHA256, first 16 bytes
//
// A node with a key (FollowerConfig.Auth, Sender.SetAuth) sends only
// version 2 and accepts only version 2; without a key only version 1. A
// version-1-only build counts sealed packets Malformed (and never
// switches); a keyless build of this one counts them Unknown.
//
// # Sequence rules (Follower)
//
// Slices are numbered from 1 within a controller epoch; epochs increase
// across controller restarts.
//
//   - Seq = last+1: applied.
//   - Seq > last+1: the Seq−last−1 slices in between are counted Lost (the
//     agent kept its row through them); the strobe is applied at once.
//   - Seq ≤ last (same epoch): late or duplicate, counted Late, not
//     applied; the agent keeps its row. A strobe counted Lost that arrives
//     after its successor is therefore also counted Late.
//   - A newer epoch resets the sequence: its first strobe is applied,
//     whatever its Seq (an agent that joins a running controller does not
//     count the slices before it as lost). An older epoch is Stale.
//
// So within an epoch Applied + Lost = LastSeq − FirstSeq + 1 whatever
// the network does (Stats.Accounted).
//
// A strobe with a Forward list (the controller's fan-out tree,
// fanout.go) is forwarded to this agent's children, on the strobe path,
// before the switch, and only when it is applied (not a late or duplicate
// one).
//
// After applying a strobe the agent sends one Heartbeat to every address
// of the peer set current at that boundary, never to itself. With one
// socket (FollowerConfig.Heartbeats nil) heartbeats travel on the strobe
// socket, are sent on the strobe path, and also go to the strobe's source
// (the controller). With a heartbeat socket of its own (what agents use)
// they are sent after the switch by another goroutine and received there,
// so that a strobe's receiver never queues behind heartbeats: on a host
// running several agents, heartbeats on the strobe path doubled the skew.
// The controller's own agent runs its Follower on the Sender's transport;
// it strobes itself, and hears the heartbeats as a peer.
//
// # Time
//
// All timestamps that another process compares (SentMono, RecvMono,
// SwitchedMono) are internal/mono.Now(): CLOCK_MONOTONIC in ns,
// comparable across processes on one host, not across hosts. Latency
// (SwitchedMono − SentMono) and skew are meaningful for agents on one
// host (a development or namespace cluster); across hosts they need
// aligned clocks. Ticker sleeps on the same clock with absolute deadlines.
//
// # Threading and lifetimes
//
//   - Transport: Send is safe for concurrent use. Each transport owns one
//     receive goroutine, which stamps RecvMono and feeds Packets; Close
//     (idempotent) closes the socket, waits for that goroutine and then
//     Packets is closed. A RealtimeUDP (ListenUDPRealtime, and
//     ListenMulticastUDPRealtime for the multicast group) given to a
//     Follower is served instead: its receive loop runs on a locked OS
//     thread at SCHED_FIFO and calls the Follower there, which opens the
//     packet and switches on that thread.
//   - Follower: Run is the receive loop and runs in the caller's goroutine
//     (locked to its real-time thread when Transport is a RealtimeUDP);
//     it returns ctx.Err() when ctx is done and nil when Packets closes.
//     With a heartbeat socket it also owns a heartbeat sender and a
//     heartbeat receiver goroutine, and with a multicast socket a
//     receiver for it (a real-time thread of its own when that socket is
//     a RealtimeUDP); all have ended when Run returns. The strobe
//     receivers apply strobes one at a time (a lock only they take):
//     SwitchFunc is never called concurrently. The strobe path shares no
//     lock with anything slower: it publishes the slice view, the
//     records and the queued heartbeats without one (publish.go), and
//     takes SetPeers' sets through atomic pointers, so a reader the
//     scheduler preempts never delays a switch. SwitchFunc and
//     HeartbeatFunc must not block for long (nothing is read or sent
//     meanwhile). SetPeers, Heard, Stats and Records are safe from any
//     goroutine.
//   - Sender: safe for concurrent use; it owns no goroutine.
//   - Auth: safe for concurrent use; one per node, shared by its Sender
//     and Follower (their packets share one sequence).
//   - Ticker: Next and Run for one goroutine; Run locks it to its OS thread
//     and returns when ctx is done. Stats from anywhere.
//   - MockNetwork: one pump goroutine per transport, ended by its Close.
//
// No package-level mutable state: loggers come in through configs.
package strobe
