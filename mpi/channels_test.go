package mpi_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/mpi/mpibuild"
	"github.com/cosched/cosched/telemetry"
)

// Two ranks in immediate delivery talk over the channel their relays
// granted them (one node: a socket pair; two nodes: a TCP connection the
// relays made), and the relays still count every message and byte for
// the job: the same as when the same program's messages go through them
// (COSCHED_MPI_CHANNELS=0), with ChannelBytes saying which path they took.
// Under bcs no channel is granted.
func TestChannelsCounted(t *testing.T) {
	prog := program(t, "node/testdata/pingpong.c")
	// run runs the ping-pong and returns the job's counts, summed over
	// the relays.
	run := func(c *cluster, ranks []int) telemetry.RelayJobStats {
		t.Helper()
		res := c.run(t, prog, ranks, 60*time.Second, "50", "4")
		for _, r := range res {
			if r.exit != 0 {
				t.Fatalf("rank %d: exit %d: %s", r.rank, r.exit, r.err)
			}
		}
		id := c.nextID - 1
		sum, found := jobTraffic(c.relays, id)
		if !found {
			t.Fatalf("no statistics for job %d", id)
		}
		return sum
	}
	for _, place := range []struct {
		name  string
		nodes int
		ranks []int
	}{{"one node", 1, []int{0, 0}}, {"two nodes", 2, []int{0, 1}}} {
		t.Run(place.name, func(t *testing.T) {
			c := newCluster(t, place.nodes, false)
			ch := run(c, place.ranks)
			c.env = []string{"COSCHED_MPI_CHANNELS=0"}
			rl := run(c, place.ranks)
			b := run(newCluster(t, place.nodes, true), place.ranks)
			t.Logf("channels %+v\nrelay %+v\nbcs %+v", ch, rl, b)
			// 50+6 round trips of 8 bytes and 4+1 of 1 MiB
			if ch.Sent < 2*56+2*5 || ch.SentBytes < 10<<20 {
				t.Errorf("channels: %d messages, %d bytes: fewer than the program sent", ch.Sent, ch.SentBytes)
			}
			if ch.Sent != ch.Delivered || ch.SentBytes != ch.DeliveredBytes {
				t.Errorf("channels: sent %d (%d bytes), delivered %d (%d bytes)", ch.Sent, ch.SentBytes, ch.Delivered, ch.DeliveredBytes)
			}
			if ch.ChannelBytes != ch.SentBytes {
				t.Errorf("channels: %d of %d bytes over the channel, want all", ch.ChannelBytes, ch.SentBytes)
			}
			for name, o := range map[string]telemetry.RelayJobStats{"relay": rl, "bcs": b} {
				if o.Sent != ch.Sent || o.SentBytes != ch.SentBytes || o.Delivered != ch.Delivered || o.DeliveredBytes != ch.DeliveredBytes {
					t.Errorf("%s: %+v, with channels %+v: counted differently", name, o, ch)
				}
				if o.ChannelBytes != 0 {
					t.Errorf("%s: %d bytes over a channel, want none", name, o.ChannelBytes)
				}
			}
		})
	}
}

// A job whose ranks are all on one node needs the relay for no message:
// channels between its ranks, and a rank's messages to itself handed over
// in memory, so its wildcard receives are matched in the library alone.
// The conformance program for channels passes so, every byte counted.
func TestChannelsOneNode(t *testing.T) {
	prog := program(t, "mpi/testdata/conformance/channels.c")
	c := newCluster(t, 1, false)
	res := c.run(t, prog, []int{0, 0, 0}, 60*time.Second)
	expectPass(t, "channels.c on 3 ranks of one node", res)
	id, found := c.nextID-1, false
	for _, js := range c.relays[0].Stats().Jobs {
		if js.Job != id {
			continue
		}
		found = true
		if js.SentBytes == 0 || js.ChannelBytes != js.SentBytes || js.Sent != js.Delivered {
			t.Errorf("counted %+v: want every byte over channels", js)
		}
	}
	if !found {
		t.Errorf("no statistics for job %d", id)
	}
}

// Ranks of one job on two nodes that ask differently: one wants every
// channel, the other same-node ones only (COSCHED_MPI_CHANNELS=node) or
// none (=0). The pair takes the relay path, and neither MPI_Init waits
// for the relays' timer: it is set to 10 min, beyond the job's time
// limit, so a job that only the timer lets start fails.
func TestChannelsMixedOptOut(t *testing.T) {
	prog := program(t, "node/testdata/pingpong.c")
	c := newClusterWith(t, 2, 0, func(cfg *relay.Config) { cfg.CrossWait = 10 * time.Minute })
	for _, tc := range []struct {
		name string
		rank int
		env  string
	}{{"lower none", 0, "COSCHED_MPI_CHANNELS=0"}, {"higher none", 1, "COSCHED_MPI_CHANNELS=0"}, {"lower node", 0, "COSCHED_MPI_CHANNELS=node"}} {
		c.rankEnv = map[int][]string{tc.rank: {tc.env}}
		res := c.run(t, prog, []int{0, 1}, 2*time.Minute, "20", "1")
		for _, r := range res {
			if r.exit != 0 {
				t.Fatalf("%s: rank %d: exit %d: %s", tc.name, r.rank, r.exit, r.err)
			}
		}
		id := c.nextID - 1
		for _, rl := range c.relays {
			for _, js := range rl.Stats().Jobs {
				if js.Job == id && js.ChannelBytes != 0 {
					t.Errorf("%s: %d bytes over a channel, want the relay path", tc.name, js.ChannelBytes)
				}
			}
		}
	}
}

// A job of C ranks and one rank of Go's comm library (rank 1), which asks
// for no channel: its relay declines its pairs at once, so the C ranks
// above it do not wait for its dial (the relays' timer is set to 10 min,
// beyond the job's limit), the C ranks exchange over channels (same-node
// and cross-node), and the barrier with the Go rank goes through the
// relays. Every byte sent is on a channel: the Go rank sends none.
func TestChannelsWithAGoRank(t *testing.T) {
	prog := program(t, "mpi/testdata/withgo.c")
	for _, tc := range []struct {
		name  string
		nodes int
		place []int
	}{{"two relays", 2, []int{0, 1, 0}}, {"three relays", 3, []int{0, 1, 2, 0}}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, tc.nodes, 0, func(cfg *relay.Config) { cfg.CrossWait = 10 * time.Minute })
			c.goRanks = map[int]func(context.Context, comm.Config) error{1: func(ctx context.Context, cfg comm.Config) error {
				r, err := comm.Dial(ctx, cfg)
				if err != nil {
					return err
				}
				if err := r.Barrier(ctx); err != nil {
					return err
				}
				return r.Finalize(ctx)
			}}
			res := c.run(t, prog, tc.place, 2*time.Minute, "1")
			expectPass(t, tc.name, res)
			id := c.nextID - 1
			sum, _ := jobTraffic(c.relays, id)
			cpairs := (len(tc.place) - 1) * (len(tc.place) - 2) // ordered pairs of C ranks
			if sum.Sent < uint64(2*cpairs) || sum.SentBytes < uint64(cpairs)<<20 || sum.Sent != sum.Delivered {
				t.Errorf("counted %+v: want %d messages of 8 bytes and 1 MiB, each delivered", sum, 2*cpairs)
			}
			if sum.ChannelBytes != sum.SentBytes {
				t.Errorf("%d of %d bytes on channels, want all", sum.ChannelBytes, sum.SentBytes)
			}
		})
	}
}

// A wildcard receive fed by a channel and the relay at once (rank 0 has a
// channel to rank 1 on its node, none to rank 2 on the other): the first
// receive takes the channel's message while the relay gives it rank 2's
// too, and the second receive, posted before that Deliver comes, must
// still get it (mpi/testdata/wildmix.c; a round hung for ever when the
// library only stashed it). Every round is a fresh chance of the race.
func TestWildcardFedByBothPaths(t *testing.T) {
	prog := program(t, "mpi/testdata/wildmix.c")
	c := newCluster(t, 2, false)
	c.env = []string{"COSCHED_MPI_CHANNELS=node"}
	res := c.run(t, prog, []int{0, 0, 1}, time.Minute, "20")
	expectPass(t, "wildmix", res)
	sum, _ := jobTraffic(c.relays, c.nextID-1)
	if sum.ChannelBytes == 0 || sum.ChannelBytes == sum.SentBytes {
		t.Errorf("counted %+v: want messages on the channel and through the relay both", sum)
	}
}

// MPI_Finalize returns once all it waits for has happened, even when it
// happened at the rank's first look, with nothing to come after it: rank
// 1 keeps its channels open past its own MPI_Finalize
// (mpi/testdata/finheld.c), and rank 0 looks late (mpi/testdata/late.c,
// preloaded). The library counted an acknowledgement read, or the last
// bytes written, as no news, and slept in poll(2) for ever: CI saw ranks
// of TestConformance/immediate/channels/3 hang so.
func TestFinalizeTakesWhatCameEarly(t *testing.T) {
	prog := program(t, "mpi/testdata/finheld.c")
	root, err := mpibuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	late := filepath.Join(t.TempDir(), "late.so")
	if out, err := exec.Command("gcc", "-O2", "-shared", "-fPIC", "-o", late, filepath.Join(root, "mpi/testdata/late.c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("gcc late.c: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, late  string
		nodes, runs int
		place       []int
		args        []string
	}{
		// a cross-node channel has fins and acks: rank 0 reads rank 1's
		// fin and the ack of its own in one go (deterministic)
		{"the last ack", "fin", 2, 1, []int{0, 1}, nil},
		// a same-node one has neither: rank 0 enters MPI_Finalize with
		// most of 64 MiB to write, and rank 1 reads it all while rank 0
		// sleeps after each poll, so that rank 0's last write may come at
		// its first look: each run is a chance (without the fix, 2 tests
		// of 4 with 3 runs each hung)
		{"the last bytes", "poll", 1, 8, []int{0, 0}, []string{strconv.Itoa(64 << 20)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.nodes, false)
			c.rankEnv = map[int][]string{0: {"LD_PRELOAD=" + late, "COSCHED_TEST_LATE=" + tc.late}}
			for range tc.runs {
				left := filepath.Join(t.TempDir(), "left")
				res := c.run(t, prog, tc.place, 30*time.Second, append([]string{left}, tc.args...)...)
				expectPass(t, "finheld", res)
				if t.Failed() {
					return
				}
			}
		})
	}
}
