package strobe

// Packet is one received datagram.
type Packet struct {
	From     string // sender's address, in the form its LocalAddr reports
	Data     []byte // owned by the receiver
	RecvMono int64  // mono.Now() when the datagram was taken off the socket
}

// Transport carries strobes and heartbeats: unreliable, unordered
// datagrams, as UDP. Implementations: ListenUDP and MockNetwork.
//
// Send is safe for concurrent use and does not block on the receiver.
// Packets returns the same channel on every call. Close is idempotent: it
// stops reception (datagrams still in the socket or the mock's queue are
// discarded), waits for the transport's goroutine, which closes Packets
// on its way out; packets already in the channel can still be read.
type Transport interface {
	Send(to string, data []byte) error // one datagram; no delivery guarantee
	Packets() <-chan Packet            // received datagrams; closed by Close
	LocalAddr() string                 // the address peers send to
	Close() error                      // idempotent; waits for its goroutine
}

// packetQueue is the depth of a transport's Packets channel. Beyond it the
// receive goroutine stops reading and the kernel's socket buffer (or the
// mock's queue) holds datagrams.
const packetQueue = 1024
