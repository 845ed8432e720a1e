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
//	13 Unwait   no longer blocked
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
)

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

// Hello opens a rank's connection.
type Hello struct {
	Job  int64 `msgpack:"job"`
	Rank int   `msgpack:"rank"`
	Size int   `msgpack:"size"`
	PID  int   `msgpack:"pid"`
}

// Welcome accepts a Hello.
type Welcome struct {
	Mode string `msgpack:"mode"` // the relay's mode: "immediate" or "bcs" (informational)
}

// Send hands a message to the relay. Tag ≥ 0.
type Send struct {
	Dst     int    `msgpack:"d"`
	Tag     int    `msgpack:"t"`
	Context int    `msgpack:"c"`
	Data    []byte `msgpack:"x"`
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
