package strobe

import (
	"errors"
	"fmt"
)

// Heartbeats larger than a packet. BCS's control data grows with the
// nodes a node talks to (about 30 bytes each), so at a few hundred nodes a
// heartbeat no longer fits in MaxPacketSize. Rather than not sending it
// (what happened before), the sender splits Data into pieces, each sent
// as a heartbeat of its own with every liveness field (Part, Parts), and
// the receiver reassembles them (reassembly) before handing the whole
// heartbeat to its HeartbeatFunc. Liveness never waits for reassembly:
// every part counts. A lost part loses that slice's data at that
// receiver, exactly as a lost unsplit heartbeat or IP fragment would.

// heartbeatOverhead is room kept in each part for the fields other than
// Data: names are at most MaxNameLen bytes, the integers at most 9 bytes
// each, the keys and headers a few dozen.
const heartbeatOverhead = MaxNameLen + 160

// heartbeatPiece is the Data carried by each part of a split heartbeat.
const heartbeatPiece = MaxPacketSize - heartbeatOverhead

// encodeHeartbeat returns hb as one packet, or as several when its Data
// does not fit in one, each encoded (sealed) by auth. It fails only for
// data beyond MaxHeartbeatParts pieces (or an invalid heartbeat).
func encodeHeartbeat(hb Heartbeat, auth *Auth) ([][]byte, error) {
	hb.Part, hb.Parts = 0, 0
	whole, err := auth.encode(&hb)
	if err == nil {
		return [][]byte{whole}, nil
	}
	if !errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	data := hb.Data
	n := (len(data) + heartbeatPiece - 1) / heartbeatPiece
	if n > MaxHeartbeatParts {
		return nil, fmt.Errorf("strobe: heartbeat data of %d bytes: more than %d parts: %w", len(data), MaxHeartbeatParts, ErrTooLarge)
	}
	out := make([][]byte, 0, n)
	for i := range n {
		hb.Part, hb.Parts = uint16(i), uint16(n)
		hb.Data = data[i*heartbeatPiece : min((i+1)*heartbeatPiece, len(data))]
		b, err := auth.encode(&hb)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// maxReassemblyBytes bounds the Data a Follower holds in incomplete
// heartbeats: pieces come off the network, and a bad sender must not grow
// it without limit. Beyond it a new split heartbeat is not reassembled
// (counted HeartbeatPartsDropped).
const maxReassemblyBytes = 32 << 20

// reassembly holds the incomplete split heartbeats, one per sender (its
// newest): a part of a newer slice replaces an older incomplete one.
type reassembly struct {
	pending map[string]*partialHeartbeat // by sender name
	bytes   int
}

type partialHeartbeat struct {
	epoch, seq uint64
	pieces     [][]byte
	have       int
	bytes      int
}

// add takes one part of a split heartbeat. It returns the whole Data when
// hb completes one, and whether the part was dropped (a stale slice, a
// part that disagrees with the ones before, or the bound).
func (r *reassembly) add(hb *Heartbeat) (data []byte, complete, dropped bool) {
	if r.pending == nil {
		r.pending = map[string]*partialHeartbeat{}
	}
	p := r.pending[hb.From]
	switch {
	case p == nil:
	case hb.Epoch < p.epoch || hb.Epoch == p.epoch && hb.Seq < p.seq:
		return nil, false, true // an older slice's part, overtaken
	case hb.Epoch != p.epoch || hb.Seq != p.seq:
		r.remove(hb.From, p) // a newer slice: the old one will not complete
		p = nil
	case len(p.pieces) != int(hb.Parts):
		return nil, false, true
	}
	if p == nil {
		if len(r.pending) >= maxTrackedPeers {
			return nil, false, true
		}
		p = &partialHeartbeat{epoch: hb.Epoch, seq: hb.Seq, pieces: make([][]byte, hb.Parts)}
		r.pending[hb.From] = p
	}
	if p.pieces[hb.Part] != nil {
		return nil, false, true // duplicate
	}
	if r.bytes+len(hb.Data) > maxReassemblyBytes {
		return nil, false, true
	}
	p.pieces[hb.Part] = append([]byte{}, hb.Data...) // never nil: marks the piece present
	p.have++
	p.bytes += len(hb.Data)
	r.bytes += len(hb.Data)
	if p.have < len(p.pieces) {
		return nil, false, false
	}
	r.remove(hb.From, p)
	for _, piece := range p.pieces {
		data = append(data, piece...)
	}
	return data, true, false
}

func (r *reassembly) remove(from string, p *partialHeartbeat) {
	r.bytes -= p.bytes
	delete(r.pending, from)
}
