package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
)

// bcsRestarts is rootPair in buffered delivery, strobed every slice by a
// goroutine as agents are at the controller's strobes (cut, then each
// node's heartbeat to the nodes HeartbeatNodes named before the cut).
type bcsRestarts struct {
	*rootPair
}

// bcsRestartSlice is the strobes' period: short, so that a test takes
// tens of slices in well under a second.
const bcsRestartSlice = 4 * time.Millisecond

func newBCSRestarts(t *testing.T, linked bool) *bcsRestarts {
	p := &bcsRestarts{newRootPairIn(t, Buffered, linked, nil)}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go p.strobes(stop, stopped)
	t.Cleanup(func() { close(stop); <-stopped }) // before the relays close (cleanups run last first)
	return p
}

// strobes cuts a slice every bcsRestartSlice and exchanges its
// heartbeats, until stop.
func (p *bcsRestarts) strobes(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(bcsRestartSlice)
	defer tick.Stop()
	for seq := uint64(1); ; seq++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		bcsNodes(p.relays).exchange(seq)
		p.mu.Unlock()
	}
}

// barrier has both ranks arrive at barrier seq and awaits both Releases:
// the job goes on after whatever came before.
func (p *bcsRestarts) barrier(a, b *client, seq uint64) {
	p.t.Helper()
	a.send(comm.FrameArrive, &comm.Arrive{Seq: seq})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: seq})
	awaitRelease(p.t, a, seq)
	awaitRelease(p.t, b, seq)
}

// The bcs counterpart of TestRestartedRootCompletesABarrierItsRankMissed:
// the root completed barrier 1 and n1 had the release (its rank left the
// barrier and arrived at the next), but the Release to the root's own
// rank died with the root's relay, so that rank resumes and arrives
// again. The new root learns that barrier 1 completed from n1's
// heartbeats (load.Released) and releases it; barrier 2 then completes.
func TestBufferedRestartedRootCompletesABarrierItsRankMissed(t *testing.T) {
	p := newBCSRestarts(t, true)
	a, b := p.hello(0, false, 0), p.hello(1, false, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	awaitRelease(t, b, 1)
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
	// Rank 0 does not read its Release: to it, the Release is lost.
	p.restart(0)
	a.c.Close()
	a = p.hello(0, true, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1}) // as the libraries replay a barrier not released
	awaitRelease(t, a, 1)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
	awaitRelease(t, a, 2)
	awaitRelease(t, b, 2)
	p.barrier(a, b, 3)
}

// The bcs counterpart of TestRestartedRootReleasesWhatItsRankHad: the
// root's rank had its Release of barrier 1, but neither the Done nor any
// sliceReady reached n1 before the root's relay died (here: queued, the
// root not knowing n1's address). Its rank, past the barrier, does not
// arrive again; its resumed Hello says it was released from barrier 1
// (Hello.Released), and the new root releases it again everywhere.
// Then barrier 2 completes.
func TestBufferedRestartedRootReleasesWhatItsRankHad(t *testing.T) {
	p := newBCSRestarts(t, false)
	a, b := p.hello(0, false, 0), p.hello(1, false, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	awaitRelease(t, a, 1)
	b.expectNothing(5 * bcsRestartSlice) // the release waits for n1's address
	p.restart(0)
	a.c.Close()
	a = p.hello(0, true, 1) // released from barrier 1, in no barrier now
	awaitRelease(t, b, 1)
	p.barrier(a, b, 2)
}

// The same, the root's rank arriving at barrier 2 at once, its Hello
// saying rel or (a library before it) not: a resumed rank that arrives
// at barrier 2 left barrier 1, so the new root releases barrier 1
// everywhere. Then barrier 2 completes.
func TestBufferedRestartedRootReleasesWhatItsRankHadBeforeItsNextBarrier(t *testing.T) {
	for _, rel := range []uint64{1, 0} {
		t.Run(fmt.Sprintf("rel=%d", rel), func(t *testing.T) {
			p := newBCSRestarts(t, false)
			a, b := p.hello(0, false, 0), p.hello(1, false, 0)
			a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
			b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
			awaitRelease(t, a, 1)
			p.restart(0)
			a.c.Close()
			a = p.hello(0, true, rel)
			a.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
			awaitRelease(t, b, 1)
			b.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
			awaitRelease(t, a, 2)
			awaitRelease(t, b, 2)
		})
	}
}

// A node other than the root restarts right after the root released
// barrier 1: its rank had not read the Release (it died with the relay,
// or n1 never had the Done: here the root does not know n1's address
// until the restart), resumes and arrives again, and is released from
// what the root's sliceReady frames say (Released); or it had read it,
// resumes past the barrier and arrives at the next, which completes.
func TestBufferedRestartedNodeAfterTheRootReleased(t *testing.T) {
	for _, c := range []struct {
		name   string
		linked bool
		read   bool // rank 1 read its Release before n1 restarted
	}{
		{"release not read", true, false},
		{"release never sent", false, false},
		{"release read", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newBCSRestarts(t, c.linked)
			a, b := p.hello(0, false, 0), p.hello(1, false, 0)
			a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
			b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
			awaitRelease(t, a, 1)
			rel := uint64(0)
			if c.read {
				awaitRelease(t, b, 1)
				rel = 1
			}
			p.restart(1)
			b.c.Close()
			b = p.hello(1, true, rel)
			if !c.read {
				b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
				awaitRelease(t, b, 1)
			}
			p.barrier(a, b, 2)
		})
	}
}

// The immediate-mode case with a library whose Hello does not say rel:
// the root's rank, released from barrier 1 before the root's relay
// died (its Done to n1 with it), arrives at barrier 2 on the new root,
// which releases barrier 1 everywhere. Before, it released it here only
// and n1, whose count of it the new root had before, waited in it for
// ever.
func TestRestartedRootReleasesWhatItsRankHadAtItsNextBarrier(t *testing.T) {
	p := newRootPair(t, false)
	a, b := p.hello(0, false, 0), p.hello(1, false, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	awaitRelease(t, a, 1)
	p.restartRoot()
	// n1 counts barrier 1 again for the new root before rank 0 resumes:
	// the root cannot answer that count with the Done yet.
	eventually(t, "n1's count of barrier 1 at the new root", func() bool {
		r := p.relays[0]
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.jobs[1].root[1]["n1"] == 1
	})
	a.c.Close()
	a = p.hello(0, true, 0)
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
	awaitRelease(t, b, 1)
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 2})
	awaitRelease(t, a, 2)
	awaitRelease(t, b, 2)
}
