package relay

import (
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// channelRank says Hello as a rank that asks for channels and returns the
// Welcome and the descriptors that came with it: same-node channels only,
// as its remote peers do not say Hello.
func channelRank(t *testing.T, r *Relay, job int64, rank, size int) (comm.Welcome, []int) {
	t.Helper()
	w, fds, err := sayHello(t, r, comm.Hello{Job: job, Rank: rank, Size: size, PID: 1, Channels: true, NodeChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	return w, fds
}

// sayHello says h to r and returns the Welcome and the descriptors that
// came with it; the connection and the descriptors are closed at the
// test's end. It may run in a goroutine of the test's.
func sayHello(t *testing.T, r *Relay, h comm.Hello) (comm.Welcome, []int, error) {
	return sayHelloPassing(t, r, h, nil)
}

// sayHelloPassing is sayHello passing descriptors pass with the Hello
// (SCM_RIGHTS), as a resumed rank of the library hands its counter page back.
func sayHelloPassing(t *testing.T, r *Relay, h comm.Hello, pass []int) (comm.Welcome, []int, error) {
	var w comm.Welcome
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: r.SocketPath(), Net: "unix"})
	if err != nil {
		return w, nil, err
	}
	t.Cleanup(func() { c.Close() })
	b, err := frame.Encode(comm.FrameHello, &h)
	if err != nil {
		return w, nil, err
	}
	var oob []byte
	if len(pass) > 0 {
		oob = unix.UnixRights(pass...)
	}
	if _, _, err := c.WriteMsgUnix(b, oob, nil); err != nil {
		return w, nil, err
	}
	c.SetReadDeadline(time.Now().Add(2 * crossWait))
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(64*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return w, nil, err
	}
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return w, nil, err
	}
	for _, m := range msgs {
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			return w, nil, err
		}
		fds = append(fds, f...)
	}
	t.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	typ, body, err := frame.NewReader(&readerOf{buf[:n]}, comm.MaxFrame).Read()
	if err != nil || typ != comm.FrameWelcome {
		return w, nil, fmt.Errorf("rank %d: frame %d, %v", h.Rank, typ, err)
	}
	err = frame.Decode(body, &w)
	return w, fds, err
}

type readerOf struct{ b []byte }

func (r *readerOf) Read(p []byte) (int, error) {
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// Immediate delivery: ranks 0 and 2 of a job on this node get one socket
// pair between them, and what they count in the counter page is the job's
// traffic in Stats (ChannelBytes among it). Buffered: no channel.
func TestChannelsGrantedAndCounted(t *testing.T) {
	r := newRelay(t, "n0", nil)
	if err := r.AddJob(1, []string{"n0", "n1", "n0"}); err != nil {
		t.Fatal(err)
	}
	w0, fds0 := channelRank(t, r, 1, 0, 3)
	w2, fds2 := channelRank(t, r, 1, 2, 3)
	if len(fds0) != 2 || len(fds2) != 2 || !slices.Equal(w0.Peers, encodeRanks([]int{2})) || !slices.Equal(w2.Peers, encodeRanks([]int{0})) ||
		w0.Slot != 0 || w2.Slot != 1 {
		t.Fatalf("grants: rank 0 %+v %v, rank 2 %+v %v", w0, fds0, w2, fds2)
	}
	// the two ends are one pair
	if _, err := unix.Write(fds0[1], []byte("hi")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if n, err := unix.Read(fds2[1], got); err != nil || string(got[:n]) != "hi" {
		t.Fatalf("read %q, %v", got[:n], err)
	}
	// what the ranks count (rank 0 sent 3 messages, 300 bytes; rank 2 received them)
	page, err := unix.Mmap(fds0[0], 0, 2*counterWords*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(page)
	put := func(slot, word int, v uint64) {
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&page[(slot*counterWords+word)*8])), v)
	}
	put(0, 0, 3)
	put(0, 1, 300)
	put(1, 2, 3)
	put(1, 3, 300)
	js := r.Stats().Jobs
	if len(js) != 1 || js[0].Sent != 3 || js[0].SentBytes != 300 || js[0].Delivered != 3 || js[0].DeliveredBytes != 300 || js[0].ChannelBytes != 300 {
		t.Fatalf("stats %+v", js)
	}
	r.RemoveJob(1) // the counts stay with the ended job
	if js := r.Stats().Jobs; len(js) != 1 || !js[0].Ended || js[0].SentBytes != 300 || js[0].ChannelBytes != 300 {
		t.Fatalf("after the job: %+v", js)
	}

	r.SetDelivery(Buffered, 10*time.Millisecond, 0)
	if err := r.AddJob(2, []string{"n0", "n0"}); err != nil {
		t.Fatal(err)
	}
	for rk := range 2 {
		if w, fds := channelRank(t, r, 2, rk, 2); len(fds) != 0 || len(w.Peers) != 0 {
			t.Fatalf("bcs: rank %d granted %+v %v", rk, w, fds)
		}
	}
}

// A relay that restarted reads again the counts of the channels its
// previous life granted: a resumed rank hands the counter page back with
// its Hello. A page that is not the job's is refused (the relay carries
// on), one it has already is not counted twice, and a page shrunk under
// the relay's mapping (its ranks hold its descriptor) loses its counts
// without bringing the relay down.
func TestCounterPageHandedBack(t *testing.T) {
	r := newRelay(t, "n0", nil)
	nodes := []string{"n0", "n0"}
	if err := r.AddJob(1, nodes); err != nil {
		t.Fatal(err)
	}
	_, fds0 := channelRank(t, r, 1, 0, 2)
	channelRank(t, r, 1, 1, 2)
	page, err := unix.Mmap(fds0[0], 0, 2*counterWords*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(page)
	for w, v := range []uint64{3, 300, 2, 200} { // rank 0 sent 3 messages, received 2
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&page[w*8])), v)
	}
	r.Close()

	again := newRelay(t, "n0", nil)
	if err := again.ReattachJob(1, nodes, uint32(unix.Getuid())); err != nil {
		t.Fatal(err)
	}
	counted := func(want uint64) {
		t.Helper()
		js := again.Stats().Jobs
		if len(js) != 1 || js[0].Sent != want || js[0].SentBytes != 100*want || js[0].ChannelBytes != 100*want {
			t.Fatalf("stats %+v, want %d messages sent on channels", js, want)
		}
	}
	resume := func(rank int, pass int) {
		t.Helper()
		h := comm.Hello{Job: 1, Rank: rank, Size: 2, PID: 1, Numbers: true, Resume: true}
		if _, _, err := sayHelloPassing(t, again, h, []int{pass}); err != nil {
			t.Fatalf("rank %d resumes: %v", rank, err)
		}
	}
	forged, err := unix.MemfdCreate("cosched-job-1-counterfeit", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(forged)
	unix.Ftruncate(forged, 2*counterWords*8)
	resume(1, forged)
	counted(0)
	resume(0, fds0[0])
	counted(3)
	// the same page again (another rank of the node), over a new
	// connection: rank 1 ends its first one
	again.RemoveJob(1)
	if err := again.ReattachJob(1, nodes, uint32(unix.Getuid())); err != nil {
		t.Fatal(err)
	}
	resume(0, fds0[0])
	resume(1, fds0[0])
	counted(3)
	unix.Ftruncate(fds0[0], 0) // the mapping now faults
	counted(0)
}
