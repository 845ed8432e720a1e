// Package relay is the node side of comm: every agent runs one Relay,
// which owns the messages of the ranks on its node. Ranks connect over a
// Unix socket (comm's protocol, comm/proto.go); relays talk to each other
// over TCP, one outbound connection per peer.
//
// # Modes
//
//   - Immediate (space, gang and local scheduling): a message is forwarded
//     as soon as its rank hands it over. Barriers are counted by the relay
//     of the job's rank 0, which releases every node when all have arrived.
//   - Buffered (BCS): messages handed over during slice k wait in the
//     node's outbox. At the strobe that starts slice k+1 (Cut) the relay
//     takes, oldest first, at most h_max = bandwidth × slice bytes of them
//     (at least one message) as that slice's transfer (package bcs, pure:
//     what goes in which slice, and when a node that finished a job may
//     leave it), and announces it in
//     its heartbeat with the barrier arrivals and the blocked ranks it saw
//     at the cut (HeartbeatData). The exchange is rooted: each job's root
//     (its first node by name that has not left it, package barrier)
//     hears the heartbeats of the job's nodes, which send theirs to their
//     jobs' roots only (HeartbeatNodes), and once every one of them has
//     reported the slice, or a timeout passes, sends each a sliceReady
//     frame: the barrier released, and what the job's nodes announced for
//     it. A node sends its transfer once the sliceReady of every job it
//     runs is in (as root: every node's heartbeat), or a timeout passes,
//     destination by destination in rounds: in round j node i sends to
//     node (i+j) mod N (nodes sorted by name), so no node receives from
//     everyone at once. The rest waits for later slices, so a message sent
//     in slice k is received in slice k+1 at the earliest. A barrier
//     completes in the slice after its last arrival: each node reports how
//     many of its ranks have arrived (cumulatively, so a lost heartbeat
//     only delays), the root counts the reports and, when they add up to
//     the job's size, releases its ranks and sends the release to the
//     job's other nodes at once; its sliceReady frames repeat it. A node
//     whose ranks of a job have all ended (FinishJob) stays in the job's
//     exchange until the slices that carry their last messages are
//     announced and transferred, so that every message delivered was
//     announced, then tells the job's other nodes (jobLeft), which stop
//     waiting for it (and heartbeat the next root if it was the root:
//     OnHeartbeatNodes; a root that left still announces the heartbeats
//     sent to it before its leave was known).
//
// # Matching and blocking
//
// Receives are matched here, per destination rank (match.go), so the
// relay knows when a rank is blocked: it has sent Wait for receives not
// yet delivered, or Arrive for a barrier not yet released. Blocked and
// unblocked transitions are reported, in order, to Config.OnBlocked (the
// agent lends the processor to another rank: process-level slot reuse).
//
// # Jobs
//
// The agent registers a job (its size and the node of every rank) with
// AddJob before starting its ranks and removes it with RemoveJob when it
// ends. Messages for a job this relay does not know yet (a remote rank was
// faster than this node's launch) are held until it does, up to a bound.
//
// # Payloads
//
// A message's payload is copied by neither the relay nor comm on its way
// through, when it is large (comm.KeepMin): connections are read in chunks
// (frame.Reader), and Deliver and peer frames are written with the
// payload sent from where it lies (writev). A payload that passes straight
// through is written from the chunk it was read into before the next read
// (direct writes, below); one that stays longer (its receive is not posted
// yet, a buffered slice, a job not registered yet) keeps its chunk, which
// the reader then leaves alone (Keep). One written by a connection's
// writer goroutine (the connection was busy, a message over 64 KiB, what
// a direct write left) is copied into its queue. Small payloads are
// copied. The garbage collector frees a chunk
// once nothing refers into it.
//
// # Direct writes
//
// A frame is queued on its connection's writeQueue under the lock; the
// goroutine that queued it on a connection no one was writing then writes
// it itself, once it has released the lock (Relay.unlock), with one
// non-blocking writev: a message goes from the socket it was read from to
// the next one on the goroutine that read it, with no hand-off. What the
// socket does not take, and batches over 64 KiB (pipelined: written while
// the reader reads on), go to the connection's writer goroutine, which
// may block; the two never write one connection at once.
//
// # Threading
//
// One mutex guards the relay's state. Goroutines, all ended by Close: the
// Unix and TCP accept loops; a reader and a writer per rank connection; a
// reader per inbound peer connection; a writer per outbound peer
// connection (it dials); the notifier that calls OnBlocked in order; the
// buffered mode's transfer loop. Writers drain unbounded queues and
// direct writes never block, so no state change ever waits for a socket:
// a stopped rank that does not read costs memory, not progress; and no
// socket write happens under the lock.
package relay
