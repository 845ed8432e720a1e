package mpi_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A cross-node channel whose TCP connection breaks mid-run is not the
// job's end (docs/mpi.md, "A broken channel"): four ranks on two relays
// (node/testdata/mpistream.c: pairs 0-1 and 2-3 across the nodes, an
// Allreduce of all four every round) exchange at full speed on channels;
// the test resets the connection of pair 0-1 (at rank 0's end, as a
// network fault would: `ss -K`, the kernel's SOCK_DESTROY), later that of
// pair 2-3 (at rank 3's end). The pairs go on through the relays, each
// resending what its peer had not read: every message once and in order
// (mpistream checks), the job completes, and the relays' counters equal
// what was sent, once each.
func TestBrokenChannelRemade(t *testing.T) {
	needSSKill(t)
	prog := program(t, "node/testdata/mpistream.c")
	c := newCluster(t, 2, false)
	var mu sync.Mutex
	pids := map[int]int{}
	c.started = func(rank, pid int) {
		mu.Lock()
		pids[rank] = pid
		mu.Unlock()
	}
	// COSCHED_MPI_DEBUG: each rank says on stderr when a channel broke and
	// how many messages it sent again
	s := startStream(t, c, prog, []int{0, 1, 0, 1}, 3*time.Minute, "COSCHED_MPI_DEBUG=1")
	pid := func(rank int) int {
		mu.Lock()
		defer mu.Unlock()
		return pids[rank]
	}
	s.progress(20)
	breakChannel(t, pid(0), pid(1))
	at1 := lastRound(s.out(0))
	s.progress(at1 + 20)
	breakChannel(t, pid(3), pid(2))
	at2 := lastRound(s.out(0))
	s.progress(at2 + 20)
	res := s.finish()
	end, _ := jobTraffic(c.relays, s.id)
	t.Logf("broke 0-1 at round %d, 2-3 at round %d, of %d; counted %+v", at1, at2, lastRound(s.out(0)), end)
	for _, r := range res {
		t.Logf("rank %d said: %s", r.rank, strings.TrimSpace(r.err))
		peer := r.rank ^ 1
		if want := fmt.Sprintf("channel to rank %d broken", peer); !strings.Contains(r.err, want) {
			t.Errorf("rank %d did not say %q", r.rank, want)
		}
		if want := fmt.Sprintf("rank %d read ", peer); !strings.Contains(r.err, want) {
			t.Errorf("rank %d did not say %q (its peer's count came)", r.rank, want)
		}
	}
	if end.Sent != end.Delivered || end.SentBytes != end.DeliveredBytes {
		t.Errorf("counted %+v: sent and delivered differ", end)
	}
	if end.ChannelBytes == 0 || end.ChannelBytes == end.SentBytes {
		t.Errorf("counted %+v: want bytes both on channels and through the relays", end)
	}
}

// What a broken channel's peer did not read is sent again through the
// relays (docs/mpi.md, "A broken channel"), deterministically here:
// mpi/testdata/chanbreak.c's rank 0 sends rank 1 24 messages of 1 MiB
// while rank 1 makes no MPI call, so most of them wait at rank 0 (the
// socket full, or past the bound of unacknowledged bytes) when the test
// resets the connection at rank 0's end. Rank 1 then receives all of
// them, each byte checked; rank 0 says it sent some again through the
// relays, and the counters equal what was sent.
func TestBrokenChannelResends(t *testing.T) {
	needSSKill(t)
	prog := program(t, "mpi/testdata/chanbreak.c")
	c := newCluster(t, 2, false)
	dir := t.TempDir()
	c.env = []string{"COSCHED_TEST_BREAK_DIR=" + dir, "COSCHED_MPI_DEBUG=1"}
	var mu sync.Mutex
	pids := map[int]int{}
	c.started = func(rank, pid int) {
		mu.Lock()
		pids[rank] = pid
		mu.Unlock()
	}
	id := c.nextID
	done := make(chan []rankResult, 1)
	go func() { done <- c.run(t, prog, []int{0, 1}, 2*time.Minute) }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, e0 := os.Stat(filepath.Join(dir, "sent"))
		_, e1 := os.Stat(filepath.Join(dir, "asleep"))
		if e0 == nil && e1 == nil {
			break
		}
		select {
		case res := <-done:
			for _, r := range res {
				t.Logf("rank %d: exit %d\n%s%s", r.rank, r.exit, r.out, r.err)
			}
			t.Fatal("the job ended early")
		default:
		}
		if time.Now().After(deadline) {
			os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
			<-done
			t.Fatal("the ranks did not reach the reset point in 60 s")
		}
	}
	mu.Lock()
	p0, p1 := pids[0], pids[1]
	mu.Unlock()
	breakChannel(t, p0, p1)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	for _, r := range res {
		t.Logf("rank %d: exit %d\n%s%s", r.rank, r.exit, r.out, r.err)
		if r.exit != 0 || strings.TrimSpace(r.out) != "ok" {
			t.Errorf("rank %d: exit %d, said %q; want 0 and ok", r.rank, r.exit, r.out)
		}
	}
	var read, again int
	if m := regexp.MustCompile(`read (\d+) bytes of the broken channel; (\d+) messages sent again`).FindStringSubmatch(res[0].err); m != nil {
		read, _ = strconv.Atoi(m[1])
		again, _ = strconv.Atoi(m[2])
	}
	if again == 0 {
		t.Errorf("rank 0 sent nothing again through the relays (stderr %q)", res[0].err)
	}
	end, _ := jobTraffic(c.relays, id)
	t.Logf("rank 1 had read %d bytes; rank 0 sent %d of 24 messages again; counted %+v", read, again, end)
	if end.Sent != end.Delivered || end.SentBytes != end.DeliveredBytes {
		t.Errorf("counted %+v: sent and delivered differ", end)
	}
}

// ssSocket is one line of `ss -tnpH`: an established TCP socket and the
// processes that hold it.
var ssSocket = regexp.MustCompile(`^ESTAB\s+\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)\s+users:\((.*)\)$`)

// breakChannel resets the channel connection between the processes a
// and b (ranks) at a's end, as a network fault would: the kernel
// destroys a's socket (ECONNABORTED there) and sends b a reset.
func breakChannel(t *testing.T, a, b int) {
	t.Helper()
	type end struct{ local, remote string }
	owners := map[end]string{}
	outb, err := exec.Command("ss", "-tnpH", "state", "established").Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	lines := strings.Split(string(outb), "\n")
	for _, l := range lines {
		// ss -H with a state filter omits the State column
		m := ssSocket.FindStringSubmatch("ESTAB " + strings.TrimSpace(l))
		if m == nil {
			continue
		}
		owners[end{net.JoinHostPort(m[1], m[2]), net.JoinHostPort(m[3], m[4])}] = m[5]
	}
	holds := func(users string, pid int) bool { return strings.Contains(users, "pid="+strconv.Itoa(pid)+",") }
	for e, users := range owners {
		if !holds(users, a) || !holds(owners[end{e.remote, e.local}], b) {
			continue
		}
		host, port, _ := net.SplitHostPort(e.local)
		rhost, rport, _ := net.SplitHostPort(e.remote)
		filter := fmt.Sprintf("src %s sport = :%s dst %s dport = :%s", host, port, rhost, rport)
		killed, err := exec.Command("ss", append([]string{"-K", "-tnH"}, strings.Fields(filter)...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(killed), port) {
			t.Fatalf("ss -K %s: %v: %s", filter, err, killed)
		}
		t.Logf("reset the channel %s → %s (processes %d and %d)", e.local, e.remote, a, b)
		return
	}
	t.Fatalf("no TCP connection between processes %d and %d in:\n%s", a, b, outb)
}

// needSSKill skips when `ss -K` cannot reset a connection here (no ss, no
// CAP_NET_ADMIN, or a kernel without SOCK_DESTROY).
func needSSKill(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("needs ss (iproute2) to reset a channel's connection")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_ = exec.CommandContext(ctx, "ss", "-K", "-tnH", "sport", "=", ":"+port).Run()
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Skipf("ss -K does not reset connections here (needs CAP_NET_ADMIN and a kernel with SOCK_DESTROY): %v", err)
	}
}
