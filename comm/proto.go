package comm

import "github.com/cosched/cosched/internal/frame"

// The rank ↔ relay protocol: one Unix stream connection per rank to its
// agent's relay (the path in COSCHED_RELAY), carrying internal/frame frames
// (length-prefixed, versioned) whose msgpack bodies are the types below.
// Frame type numbers are part of the wire format: append only, never
// renumber. The relay enforces MaxFrame on what ranks send; a rank enforces
// it on what the relay sends.
//
//	rank → relay                          relay → rank
//	 1 Hello    once, first               2 Welcome  (or Fatal, then close)
//	 3 Send     a message                 6 Deliver  a matched receive
//	 4 Post     a receive                 8 Release  a barrier completed
//	 5 Wait     blocked until reqs done  12 Fatal    the job is over / bad input
//	 7 Arrive   at a barrier             11 Bye      answer to Finalize
//	 9 Stats    benchmark statistics
//	10 Finalize last
//	13 Unwait   no longer blocked            15 Probed   answer to Probe
//	14 Probe    is a message there?
//	16 Coll     entering a collective (MPI library; no answer)
//	18 Abort    MPI_Abort: fail the job (no answer; 17 is unused)
//	                                     19 Acked    messages delivered (v3)
//	                                     20 Resend   a destination's relay restarted (v3)
//	22 Drained  a channel read to its end   21 Revoke   take the channels back
//	23 Broken   a channel's connection broke (both ways)
//
// Semantics the relay provides and the library relies on:
//   - Sends complete locally: a Send frame is the message handed over (the
//     relay buffers it). The library never waits for a send.
//   - Matching happens in the relay, per destination rank: an arriving
//     message goes to the oldest posted receive it matches, else it queues;
//     a Post takes the oldest queued message it matches, else it waits.
//     Messages from one source arrive in the order they were sent, so order
//     per (source, tag) is preserved, and each message is delivered once.
//   - Context separates the user's traffic (ContextUser) from the
//     library's collectives (ContextCollective): AnyTag never matches
//     across contexts.
//   - Wait tells the relay the rank is blocked until every listed request
//     has been delivered; Arrive blocks it until the barrier's Release. The
//     relay uses this for slot reuse (lending the processor to another
//     rank) and reports blocked ranks in its heartbeats; it clears the
//     state itself when it sends the Deliver or Release that ends it, and
//     the rank clears it with Unwait when it stops waiting first (its ctx
//     ended): a rank the relay wrongly believed blocked would go on
//     sharing its processor with the rank lent it.
const (
	FrameHello    frame.Type = 1
	FrameWelcome  frame.Type = 2
	FrameSend     frame.Type = 3
	FramePost     frame.Type = 4
	FrameWait     frame.Type = 5
	FrameDeliver  frame.Type = 6
	FrameArrive   frame.Type = 7
	FrameRelease  frame.Type = 8
	FrameStats    frame.Type = 9
	FrameFinalize frame.Type = 10
	FrameBye      frame.Type = 11
	FrameFatal    frame.Type = 12
	FrameUnwait   frame.Type = 13
	FrameProbe    frame.Type = 14
	FrameProbed   frame.Type = 15
	FrameColl     frame.Type = 16
	FrameAbort    frame.Type = 18
	FrameAcked    frame.Type = 19
	FrameResend   frame.Type = 20
	// FrameRevoke (relay → rank): stop using the channels; FrameDrained
	// (rank → relay): a peer's channel is read to its end marker
	// (docs/mpi.md, "Taking channels back").
	FrameRevoke  frame.Type = 21
	FrameDrained frame.Type = 22
	// FrameBroken (both ways): a cross-node channel's connection broke;
	// the relays carry it to the other rank of the pair (docs/mpi.md, "A
	// broken channel").
	FrameBroken frame.Type = 23
	// FrameCancel (rank → relay): take a posted receive back
	// (MPI_Cancel); FrameCancelled (relay → rank): whether it was still
	// posted. A receive matched before has had its Deliver written
	// before the answer.
	FrameCancel    frame.Type = 24
	FrameCancelled frame.Type = 25
)

// ProtocolVersion is the protocol the relay speaks, in Welcome.V: 2 has
// Probe, Coll, Abort and contexts up to MaxContext; a relay that predates
// them sends no version (0). 3 has numbered messages (Send.Seq,
// Deliver.Seq), Acked, Resend and resumed Hellos: a rank numbers its
// messages only when its relay says 3 or more (docs/runtime.md, "Relay
// restarts"). 4 has Cancel and Cancelled.
const ProtocolVersion = 4

// CancelVersion is the first protocol with Cancel.
const CancelVersion = 4

// ResumeVersion is the first protocol with numbered messages and resumed
// connections.
const ResumeVersion = 3

// MaxContext bounds message contexts: a rank may use [0, MaxContext).
// 0 and 1 are this library's; cosched's MPI library gives each
// communicator a pair of its own above them.
const MaxContext = 1 << 30

// MaxTag bounds message tags: a tag is in [0, MaxTag].
const MaxTag = 1<<31 - 1

// MaxMessage is the largest message payload, in bytes.
const MaxMessage = 4 << 20

// KeepMin is the smallest payload kept where it was read: a received
// message of at least this size shares the memory it was read into
// (frame.ChunkSize bytes) with the messages read with it, which saves a
// copy of every large message; smaller ones are copied out. The relay
// does the same with what it holds.
const KeepMin = 2048

// MaxFrame bounds every frame on a rank connection: a message plus its
// header.
const MaxFrame = MaxMessage + 1024

// AnySource and AnyTag match any sender and any tag in a receive.
const (
	AnySource = -1
	AnyTag    = -1
)

// Message contexts.
const (
	ContextUser       = 0 // Send/Recv and friends
	ContextCollective = 1 // Barrier (immediate modes), Alltoall, Allreduce
)

// Hello opens a rank's connection. Numbers says the rank numbers its
// messages (Send.Seq) if the relay speaks ResumeVersion: its agent keeps
// its ranks, and it understands Acked and Resend. Resume says the rank connected before,
// to a relay that has since died (its agent restarted), and numbers its
// messages; Got is what it had received then: the relay drops what a
// sender resends of it and delivers the rest in order.
type Hello struct {
	Job     int64    `msgpack:"job"`
	Rank    int      `msgpack:"rank"`
	Size    int      `msgpack:"size"`
	PID     int      `msgpack:"pid"`
	Numbers bool     `msgpack:"numbers,omitempty"`
	Resume  bool     `msgpack:"resume,omitempty"`
	Got     []Stream `msgpack:"got,omitempty"`
	// Released, in a resumed Hello, is the last barrier whose Release
	// the rank had: a restarted root may not know it completed (its Done
	// to the other nodes died with it) while their ranks still wait in it.
	Released uint64 `msgpack:"rel,omitempty"`
	// Channels asks for channels to the job's other ranks, on this node
	// and, in immediate delivery, on others (comm/relay/channels.go,
	// xchannels.go): the Welcome then carries them.
	Channels bool `msgpack:"ch,omitempty"`
	// NodeChannels limits Channels to the ranks on this node: no
	// cross-node channel (comm/relay/xchannels.go) is made for the rank,
	// and its relay tells its remote peers' relays so at once. Without
	// Channels (no channel at all) it still says that: a library whose
	// other ranks may ask for channels says it, so that they do not wait.
	NodeChannels bool `msgpack:"chn,omitempty"`
	// Revoke says the library takes Revoke: its relay may take its
	// channels back (switched to bcs while the job runs). A rank that
	// does not say it keeps its channels.
	Revoke bool `msgpack:"rv,omitempty"`
	// Draining and ChannelPeers, in a resumed Hello, rebuild what a
	// restarted relay forgot of the rank's channels (comm/relay/revoke.go):
	// the peers whose channel it has not read to the end since it took
	// its channels back (the relay holds their relay-path messages until
	// Drained), and those it still has a channel to, not taken back.
	Draining     []int `msgpack:"dr,omitempty"`
	ChannelPeers []int `msgpack:"cp,omitempty"`
}

// Revoke tells a rank with channels to stop sending on them: it writes
// an end marker on each, and once it has read a peer's marker it posts
// that peer's receives to the relay and says Drained. Until then the
// relay holds what that peer sends it through the relay.
type Revoke struct{}

// Drained says the rank has read Peer's channel to its end marker (or
// its end): the relay may deliver what it held from Peer.
type Drained struct {
	Peer int `msgpack:"p"`
}

// Broken says a channel's connection broke. From a rank: its channel to
// Peer; from the relay: Peer's channel to the rank. Read is how many
// bytes of the other's stream its sender read (whole frames): the other
// resends the rest through the relays. Reply: the sender still waits for
// the other's count (a first word, or one said again after a relay
// restarted); an answer says false, so that two ranks never echo.
type Broken struct {
	Peer  int    `msgpack:"p"`
	Read  uint64 `msgpack:"n"`
	Reply bool   `msgpack:"w"`
}

// Stream is what a rank has received of one source's numbered messages:
// every one up to Floor, and those in Above (all greater than Floor:
// receives may match out of order across tags and contexts).
type Stream struct {
	Src   int      `msgpack:"s"`
	Floor uint64   `msgpack:"f"`
	Above []uint64 `msgpack:"a,omitempty"`
}

// Welcome accepts a Hello.
type Welcome struct {
	Mode    string `msgpack:"mode"` // the relay's mode: "immediate" or "bcs" (informational)
	Version int    `msgpack:"v"`    // ProtocolVersion (0: a relay before version 2)
	// Peers are the ranks the relay granted a channel to (4 bytes each,
	// little endian), in the order of the descriptors passed with this
	// frame (SCM_RIGHTS) after the first, the counter page; Slot is the
	// rank's counters' index in that page.
	Peers []byte `msgpack:"ch,omitempty"`
	Slot  int    `msgpack:"cs,omitempty"`
}

// Send hands a message to the relay. Tag ≥ 0. Seq numbers the messages
// from this rank to Dst, 1, 2, … (all contexts together), when the relay
// speaks ResumeVersion; 0 is an unnumbered message.
type Send struct {
	Dst     int    `msgpack:"d"`
	Tag     int    `msgpack:"t"`
	Context int    `msgpack:"c"`
	Data    []byte `msgpack:"x"`
	Seq     uint64 `msgpack:"q,omitempty"`
}

// Acked says the rank's messages to Dst numbered Seqs were delivered to
// Dst (written to its connection): the rank may forget them.
type Acked struct {
	Dst  int      `msgpack:"d"`
	Seqs []uint64 `msgpack:"q"`
}

// Resend asks the rank to send again, in order, every numbered message
// to the ranks Dsts not acknowledged yet: their relay restarted and what
// it held is lost. The receiving relay drops what was delivered already.
type Resend struct {
	Dsts []int `msgpack:"d"`
}

// EncodedSizeHint lets frames carrying a payload be encoded in one piece.
func (s Send) EncodedSizeHint() int { return len(s.Data) + 32 }

// Post posts a receive; Req is the rank's own identifier, unique on its
// connection, echoed in the Deliver. Src may be AnySource, Tag AnyTag.
type Post struct {
	Req     uint64 `msgpack:"r"`
	Src     int    `msgpack:"s"`
	Tag     int    `msgpack:"t"`
	Context int    `msgpack:"c"`
}

// Wait says the rank is blocked until every request in Reqs (posted
// receives) has been delivered. Requests already delivered are ignored.
type Wait struct {
	Reqs []uint64 `msgpack:"r"`
}

// EncodedSizeHint lets frames carrying a payload be encoded in one piece.
func (d Deliver) EncodedSizeHint() int { return len(d.Data) + 48 }

// Unwait says the rank stopped waiting before the wait was over (its
// context ended): for the listed receives, and for barrier Barrier's
// release when it is not 0. The receives stay posted and the rank stays
// arrived at the barrier; it just is not blocked on them any more.
type Unwait struct {
	Reqs    []uint64 `msgpack:"r"`
	Barrier uint64   `msgpack:"b"`
}

// Deliver completes a posted receive.
type Deliver struct {
	Req  uint64 `msgpack:"r"`
	Src  int    `msgpack:"s"`
	Tag  int    `msgpack:"t"`
	Data []byte `msgpack:"x"`
	Seq  uint64 `msgpack:"q,omitempty"` // the message's Send.Seq (0: unnumbered)
}

// Arrive enters barrier number Seq (1, 2, … per rank; every rank of a job
// calls its barriers in the same order).
type Arrive struct {
	Seq uint64 `msgpack:"s"`
}

// Release completes barrier Seq.
type Release struct {
	Seq uint64 `msgpack:"s"`
}

// Stats is what a benchmark rank reports about its run, forwarded to the
// controller with the rank's exit.
type Stats struct {
	Iterations int   `msgpack:"it"`
	Compute    int64 `msgpack:"cp"` // ns of computation
	CommWait   int64 `msgpack:"cw"` // ns blocked in communication
	Wall       int64 `msgpack:"wl"` // ns from the first iteration to the last
}

// Finalize ends the rank's communication; the relay answers Bye. A rank
// whose connection closes without Finalize has failed (its job fails).
type Finalize struct{}

// Bye answers Finalize.
type Bye struct{}

// Fatal reports an error that ends the connection (bad request, unknown
// job, the job was killed). The relay closes the connection after it.
type Fatal struct {
	Error string `msgpack:"e"`
}

// Probe asks whether a message matching Src, Tag and Context is queued
// for the rank (not yet taken by a receive), without taking it. The
// relay answers Probed for Req: at once if Block is false (Found false if
// there is none), else when one arrives, the rank counting as blocked
// meanwhile, as in a Wait; Unwait with Req cancels a blocking probe (an
// answer may still come, which the rank ignores).
type Probe struct {
	Req     uint64 `msgpack:"r"`
	Src     int    `msgpack:"s"`
	Tag     int    `msgpack:"t"`
	Context int    `msgpack:"c"`
	Block   bool   `msgpack:"b"`
}

// Cancel takes back the receive posted as Req (protocol 4).
type Cancel struct {
	Req uint64 `msgpack:"r"`
}

// Cancelled answers Cancel: Done when the receive was still posted and
// is gone; otherwise it was matched and its Deliver came first.
type Cancelled struct {
	Req  uint64 `msgpack:"r"`
	Done bool   `msgpack:"d"`
}

// Probed answers Probe Req: the oldest queued message it matches, its
// source, tag and payload length.
type Probed struct {
	Req   uint64 `msgpack:"r"`
	Found bool   `msgpack:"f"`
	Src   int    `msgpack:"s"`
	Tag   int    `msgpack:"t"`
	Len   int    `msgpack:"n"`
}

// Coll announces that the rank enters collective number Seq (1, 2, … per
// communicator) of the communicator whose collective context is Context:
// its kind (CollKind), root (-1 or ignored for those without one) and
// the bytes this rank contributes. The collective's data then travels as
// Send frames in that context; the relay counts collectives and may plan
// with them.
type Coll struct {
	Seq     uint64 `msgpack:"q"`
	Context int    `msgpack:"c"`
	Kind    string `msgpack:"k"`
	Root    int    `msgpack:"o"`
	Bytes   int64  `msgpack:"n"`
}

// CollKind reports whether k is a collective a Coll may announce.
func CollKind(k string) bool {
	switch k {
	case "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
		"allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter", "scan", "exscan",
		"neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv":
		return true
	}
	return false
}

// Abort is MPI_Abort (or a call the library does not support): the job
// fails with Error, the rank's other peers are killed, and the rank exits
// with Code without waiting for an answer.
type Abort struct {
	Code  int    `msgpack:"x"`
	Error string `msgpack:"e"`
}

// MaxAbortText bounds the Abort message the relay keeps (MPICH's
// MPI_MAX_ERROR_STRING).
const MaxAbortText = 512
