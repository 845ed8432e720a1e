package relay

import (
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/telemetry"
)

// Channels (docs/mpi.md, "Same-node channels"): in immediate delivery, two
// ranks of one job on this node that asked for it in their Hello (MPI's
// library does) exchange their messages over a Unix socket pair the relay
// creates and hands to both with the Welcome (SCM_RIGHTS), not through the
// relay. The relay still owns the traffic: it decides (no pair is granted
// under bcs, where every message must wait for its slice), and each rank
// counts what it sends and receives on its channels in a page of a memfd
// the relay also maps, which Stats adds to the job's counters.
//
// A pair is granted for the job's life here, so the two ranks never mix
// paths (MPI's per-pair order is the socket's). It is created when the
// first of the two says Hello; the other end waits in the relay until the
// second one does.

// maxChannelRanks bounds the local ranks of a job given channels: a rank
// receives one descriptor per local peer, and the relay may hold up to
// n(n-1)/2 ends waiting for ranks not connected yet.
const maxChannelRanks = 32

// counterWords are a rank's counters in the page: sent, sent bytes,
// delivered, delivered bytes (the library's chan.c writes them).
const counterWords = 4

// jobChannels is a job's channels on this node.
type jobChannels struct {
	memfd int
	mem   []byte      // the counters, counterWords per local rank
	slot  map[int]int // rank → its counters' index
	// waiting are ends created with a Hello and not handed over yet:
	// waiting[b][a] is b's end of the pair (a, b).
	waiting map[int]map[int]int
	// more are pages of this relay's previous life that resumed ranks
	// handed back after a page of this life was made (adoptPageLocked):
	// their counts are added too.
	more []counterPage
	dead bool // mem faulted (addPage): no longer read
}

// counterPage is another mapped page of counters and its descriptor.
type counterPage struct {
	fd   int
	mem  []byte
	dead bool
}

// newJobChannels maps the counters of a job whose local ranks are ranks.
func newJobChannels(id int64, ranks []int) (*jobChannels, error) {
	fd, err := unix.MemfdCreate(pageName(id), unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd for job %d's channel counters: %w", id, err)
	}
	size := len(ranks) * counterWords * 8
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size job %d's channel counters: %w", id, err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map job %d's channel counters: %w", id, err)
	}
	return &jobChannels{memfd: fd, mem: mem, slot: slotsOf(slices.Values(ranks)), waiting: map[int]map[int]int{}}, nil
}

// grant returns the descriptors for rank's Welcome — the counter page,
// then its end of a pair with each other local rank — and those ranks.
// The pair ends in the result are the caller's to close once sent.
func (jc *jobChannels) grant(rank int) (fds []int, peers []int, err error) {
	fds = []int{jc.memfd}
	mine := jc.waiting[rank]
	delete(jc.waiting, rank)
	for peer := range jc.slot {
		if peer == rank {
			continue
		}
		if fd, ok := mine[peer]; ok { // the peer connected first
			fds = append(fds, fd)
			peers = append(peers, peer)
			delete(mine, peer)
			continue
		}
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			for _, fd := range fds[1:] {
				unix.Close(fd)
			}
			for _, fd := range mine {
				unix.Close(fd)
			}
			return nil, nil, fmt.Errorf("socket pair for ranks %d and %d: %w", rank, peer, err)
		}
		fds = append(fds, pair[0])
		peers = append(peers, peer)
		if jc.waiting[peer] == nil {
			jc.waiting[peer] = map[int]int{}
		}
		jc.waiting[peer][rank] = pair[1]
	}
	for _, fd := range mine { // peers no longer in the job's list: none expected
		unix.Close(fd)
	}
	return fds, peers, nil
}

// add adds what the ranks counted on their channels to st.
func (jc *jobChannels) add(st *telemetry.RelayJobStats) {
	jc.dead = jc.dead || !addPage(jc.mem, st)
	for i := range jc.more {
		p := &jc.more[i]
		p.dead = p.dead || !addPage(p.mem, st)
	}
}

// addPage adds the counts of page mem to st, or says it can no longer be
// read: a rank holds the page's descriptor (to hand it back to a
// restarted relay) and could shrink the file under the mapping, which
// would fault here; the page's counts are then lost, the relay carries on.
func addPage(mem []byte, st *telemetry.RelayJobStats) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	var sum telemetry.RelayJobStats
	for i := 0; i+counterWords*8 <= len(mem); i += counterWords * 8 {
		w := func(k int) uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[i+8*k]))) }
		sum.Sent += w(0)
		sum.SentBytes += w(1)
		sum.Delivered += w(2)
		sum.DeliveredBytes += w(3)
	}
	st.Sent += sum.Sent
	st.SentBytes += sum.SentBytes
	st.ChannelBytes += sum.SentBytes
	st.Delivered += sum.Delivered
	st.DeliveredBytes += sum.DeliveredBytes
	return true
}

// close releases the counters and the ends never handed over.
func (jc *jobChannels) close() {
	for _, m := range jc.waiting {
		for _, fd := range m {
			unix.Close(fd)
		}
	}
	jc.waiting = nil
	unix.Munmap(jc.mem)
	unix.Close(jc.memfd)
	for _, p := range jc.more {
		unix.Munmap(p.mem)
		unix.Close(p.fd)
	}
	jc.more = nil
}

// adoptPageLocked takes the counter page that a resumed rank of j handed
// back with its Hello (fd, the caller's no longer): this relay's previous
// life made it and the ranks still count there, so Stats reads it again.
// A page this relay has already is closed; anything but a page of j's
// (a memfd of its name and size) is refused, and the counts of that
// rank's channels are then not seen here.
func (r *Relay) adoptPageLocked(j *job, fd int) error {
	keep := false
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("counter page: %w", err)
	}
	name, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	size := len(j.local) * counterWords * 8
	if want := "/memfd:" + pageName(j.id) + " "; !strings.HasPrefix(name+" ", want) || st.Size != int64(size) {
		return fmt.Errorf("counter page handed back is %q of %d bytes, want %q of %d", name, st.Size, want[:len(want)-1], size)
	}
	same := func(other int) bool {
		var o unix.Stat_t
		return unix.Fstat(other, &o) == nil && o.Dev == st.Dev && o.Ino == st.Ino
	}
	if j.ch != nil {
		if same(j.ch.memfd) {
			return nil
		}
		for _, p := range j.ch.more {
			if same(p.fd) {
				return nil
			}
		}
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the counter page handed back: %w", err)
	}
	keep = true
	if j.ch != nil {
		j.ch.more = append(j.ch.more, counterPage{fd: fd, mem: mem})
		return nil
	}
	j.ch = &jobChannels{memfd: fd, mem: mem, slot: slotsOf(mapKeysOf(j.local)), waiting: map[int]map[int]int{}}
	return nil
}

// pageName is the name of job id's counter page (its memfd's).
func pageName(id int64) string { return fmt.Sprintf("cosched-job-%d-counters", id) }

// slotsOf numbers ranks in order: each one's counters' index in the page.
func slotsOf(ranks func(func(int) bool)) map[int]int {
	slot := map[int]int{}
	for i, rk := range slices.Sorted(ranks) {
		slot[rk] = i
	}
	return slot
}

// channelsLocked returns the channels of rank rs (nil: none): the job
// runs in immediate delivery with 2 to maxChannelRanks ranks here, and
// the rank asked for them.
//
// remote: the rank has cross-node channels (xchannels.go), which need
// the page whatever the rest.
func (r *Relay) channelsLocked(j *job, asked, remote bool) (*jobChannels, error) {
	if !remote && (!asked || j.ch == nil && (r.mode != Immediate || len(j.local) < 2 || len(j.local) > maxChannelRanks)) {
		return nil, nil
	}
	if j.ch == nil {
		ranks := make([]int, 0, len(j.local))
		for rk := range j.local {
			ranks = append(ranks, rk)
		}
		jc, err := newJobChannels(j.id, ranks)
		if err != nil {
			return nil, err
		}
		j.ch = jc
	}
	return j.ch, nil
}

// jobStatsLocked is j's counters with what its ranks counted on channels.
func jobStatsLocked(j *job) telemetry.RelayJobStats {
	st := j.st
	if j.ch != nil {
		j.ch.add(&st)
	}
	return st
}

// encodeRanks is the Welcome's list of granted peers: 4 bytes each, little
// endian, in the order of the descriptors after the counter page.
func encodeRanks(peers []int) []byte {
	b := make([]byte, 0, 4*len(peers))
	for _, p := range peers {
		b = append(b, byte(p), byte(p>>8), byte(p>>16), byte(p>>24))
	}
	return b
}
