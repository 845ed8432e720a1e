package mpi_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/comm/relay"
)

// A rank of cosched's MPI library with a relay grace (COSCHED_RELAY_GRACE,
// as an agent with --keep-ranks gives it) outlives its relay: two ranks
// on two relays in this process, immediate delivery, exchange numbered
// messages (node/testdata/mpistream.c: Isend/Irecv on two tags matched
// out of order, a blocking ping-pong, Allreduce, Barrier) at full speed
// while one relay and then the other, three times each, is closed and
// made again, the job reattached as a restarted agent does. The ranks
// run on through each restart, wherever they are: each resumes its
// connection in the middle of whatever call it was in, every message
// arrives exactly once and in order, and both end after MPI_Finalize.
// "relay path": the two ranks' messages go through the relays
// (COSCHED_MPI_CHANNELS=node). "channel": over the TCP connection the
// relays made them, which lives between the ranks and survives the
// restarts (once each relay: the ranks still resume their relay
// connections, for collectives' announcements and barriers).
// "bcs": the relay path in bcs delivery, strobed every 4 ms: messages,
// barrier arrivals and releases travel in the slices' exchange, and a
// restart may come between a root's release and its sliceReady frames.
func TestRanksResumeOnRestartedRelays(t *testing.T) {
	t.Run("relay path", func(t *testing.T) { resumeOnRestarts(t, 0, []int{1, 0, 1, 0, 1, 0}, "COSCHED_MPI_CHANNELS=node") })
	t.Run("channel", func(t *testing.T) { resumeOnRestarts(t, 0, []int{1, 0}) })
	t.Run("bcs", func(t *testing.T) {
		resumeOnRestarts(t, 4*time.Millisecond, []int{1, 0, 1, 0}, "COSCHED_MPI_CHANNELS=node")
	})
}

// resumeOnRestarts is TestRanksResumeOnRestartedRelays restarting the
// relays of downs in turn, the ranks with env, in bcs delivery with
// slices of slice (0: immediate).
func resumeOnRestarts(t *testing.T, slice time.Duration, downs []int, env ...string) {
	prog := program(t, "node/testdata/mpistream.c")
	c := newClusterSlice(t, 2, slice)
	id, nodes := c.nextID, []string{c.names[0], c.names[1]}
	relays := slices.Clone(c.relays) // the run's goroutine read c.relays: restarts change this copy
	s := startStream(t, c, prog, []int{0, 1}, 2*time.Minute, append([]string{"COSCHED_RELAY_GRACE=10s", "COSCHED_MPI_DEBUG=1"}, env...)...)
	out, done := s.out, s.done
	stuck := func(why string) {
		t.Helper()
		for _, r := range relays { // the ranks end within their grace, saying why
			r.Close()
		}
		for _, r := range <-done {
			t.Logf("rank %d: exit %d, at round %d; stderr %q", r.rank, r.exit, lastRound(out(r.rank)), r.err)
		}
		t.Fatal(why)
	}
	progress := func(rank, after int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); lastRound(out(rank)) <= after; time.Sleep(10 * time.Millisecond) {
			select {
			case res := <-done:
				done <- res
				stuck("the job ended early")
			default:
			}
			if time.Now().After(deadline) {
				stuck(fmt.Sprintf("rank %d at round %d after 30 s, want past %d", rank, lastRound(out(rank)), after))
			}
		}
	}
	began := time.Now()
	progress(1, 20)
	t.Logf("20 rounds %v after the start", time.Since(began).Round(time.Millisecond))
	for _, down := range downs {
		at := max(lastRound(out(0)), lastRound(out(1)))
		restarted := time.Now()
		relays[down].Close()
		r, err := c.newRelay(nodes[down])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if slice > 0 { // as the restarted agent sets it, before it reattaches its jobs
			r.SetDelivery(relay.Buffered, slice, 50e6)
		}
		relays[down] = r
		c.restarted(down, r)
		peers := map[string]string{}
		for i, r := range relays {
			peers[nodes[i]] = r.Addr()
		}
		for _, r := range relays {
			r.SetPeers(peers)
		}
		if err := r.ReattachJob(id, nodes, uint32(os.Getuid())); err != nil {
			t.Fatal(err)
		}
		progress(down, at+10)
		progress(1-down, at+10)
		t.Logf("%s restarted at round %d; 10 rounds more in %v", nodes[down], at, time.Since(restarted).Round(time.Millisecond))
	}
	if err := os.WriteFile(s.stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	t.Logf("ended %v after the start", time.Since(began).Round(time.Millisecond))
	var dups uint64
	for _, r := range relays {
		dups += r.Stats().Duplicates
	}
	for _, r := range res {
		f, bad := streamRun(r, out(r.rank))
		if bad != "" {
			t.Fatal(bad)
		}
		if n, want := strings.Count(r.err, "relay connection resumed"), len(downs)/2; n != want {
			t.Errorf("rank %d: %d resumed connections in its stderr, want %d: %q", r.rank, n, want, r.err)
		}
		t.Logf("rank %d: %d rounds, each message once and in order; %s", r.rank, len(f)-2, strings.ReplaceAll(strings.TrimSpace(r.err), "\n", "; "))
	}
	t.Logf("duplicates dropped at the relays: %d", dups)
	if len(env) == 0 { // channels: the restarted relays read the ranks' pages again
		rounds := uint64(strings.Count(readFile(out(0)), "got "))
		sum, _ := jobTraffic(relays, id)
		// each round, each rank: 16 bytes with tags 1 and 2, 6000 with
		// tag 3; every third round the Allreduce's 8 bytes to the peer;
		// each message 1 byte more, the library's header (p2p.c)
		msgs, bytes := 2*(3*rounds+rounds/3), 2*(6035*rounds+9*(rounds/3))
		t.Logf("%d rounds; counted by the relays after the restarts: %+v", rounds, sum)
		if sum.Sent != msgs || sum.SentBytes != bytes || sum.Delivered != msgs || sum.DeliveredBytes != bytes || sum.ChannelBytes != bytes {
			t.Errorf("counted %+v, want %d messages and %d bytes sent and delivered, all on channels", sum, msgs, bytes)
		}
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
