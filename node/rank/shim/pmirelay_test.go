package shim

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// relayRig is a keeper's relay between a test playing the program and a
// test playing the agent (first on the inherited socketpair, then on the
// resume socket).
type relayRig struct {
	t     *testing.T
	prog  *bufio.ReadWriter // the program's end
	agent *bufio.ReadWriter // the agent's end of the current connection
	aconn net.Conn
	ln    net.Listener
}

func newRelayRig(t *testing.T, grace time.Duration) *relayRig {
	addr := fmt.Sprintf("@cosched-test-relay-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, progFD, err := newPMIRelay("addr="+addr+" job=7 rank=1 grace="+grace.String(), pair[1])
	if err != nil {
		t.Fatal(err)
	}
	// The relay's goroutines end with the program's socket, or retry
	// until the grace.
	t.Cleanup(func() { ln.Close(); r.prog.Close() })
	r.start()
	rig := &relayRig{t: t, ln: ln}
	rig.prog = rw(t, fileConn(t, progFD))
	rig.aconn = fileConn(t, pair[0])
	rig.agent = rw(t, rig.aconn)
	return rig
}

func fileConn(t *testing.T, fd int) net.Conn {
	f := os.NewFile(uintptr(fd), "test")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

func rw(t *testing.T, c net.Conn) *bufio.ReadWriter {
	return bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))
}

func send(t *testing.T, w *bufio.ReadWriter, line string) {
	t.Helper()
	if _, err := w.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, r *bufio.ReadWriter, want string) {
	t.Helper()
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	if got = strings.TrimSuffix(got, "\n"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// roundTrip is a command of the program answered by the agent.
func (g *relayRig) roundTrip(cmd, reply string) {
	g.t.Helper()
	send(g.t, g.prog, cmd)
	expect(g.t, g.agent, cmd)
	send(g.t, g.agent, reply)
	expect(g.t, g.prog, reply)
}

// die closes the agent's end and accepts the keeper's next connection,
// checking its hello and answering that the agent's job is at barrier
// epoch.
func (g *relayRig) die(hello string, epoch int) {
	g.t.Helper()
	g.aconn.Close()
	c, err := g.ln.Accept()
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	g.aconn, g.agent = c, rw(g.t, c)
	expect(g.t, g.agent, hello)
	send(g.t, g.agent, fmt.Sprintf("cmd=cosched_resume rc=0 barriers=%d", epoch))
}

// The agent dies while the rank waits in a barrier: the keeper resumes
// with the agent's next life, sends again what the rank said since its
// last barrier, drops the answers the rank already had, and the rank gets
// the barrier's end, once.
func TestRelayReplaysIntoTheNextAgent(t *testing.T) {
	g := newRelayRig(t, 2*time.Second)
	g.roundTrip("cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init rc=0")
	g.roundTrip("cmd=put kvsname=k key=a value=1", "cmd=put_result rc=0")
	send(t, g.prog, "cmd=barrier_in")
	expect(t, g.agent, "cmd=barrier_in")

	g.die("cmd=cosched_resume job=7 rank=1 barriers=0 inited=1 finalized=0", 0)
	for _, l := range []string{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=put kvsname=k key=a value=1", "cmd=barrier_in"} {
		expect(t, g.agent, l)
	}
	send(t, g.agent, "cmd=response_to_init rc=0") // dropped: the rank had it
	send(t, g.agent, "cmd=put_result rc=0")       // dropped
	send(t, g.agent, "cmd=barrier_out rc=0")
	expect(t, g.prog, "cmd=barrier_out rc=0")

	// After the barrier only what follows is replayed.
	g.roundTrip("cmd=get kvsname=k key=b", "cmd=get_result rc=0 value=2")
	send(t, g.prog, "cmd=finalize")
	expect(t, g.agent, "cmd=finalize")
	g.die("cmd=cosched_resume job=7 rank=1 barriers=1 inited=1 finalized=0", 1)
	expect(t, g.agent, "cmd=get kvsname=k key=b")
	expect(t, g.agent, "cmd=finalize")
	send(t, g.agent, "cmd=get_result rc=0 value=2") // dropped
	send(t, g.agent, "cmd=finalize_ack rc=0")
	expect(t, g.prog, "cmd=finalize_ack rc=0")
}

// The barrier the rank waits in ended before the agent died (its next
// life is one barrier further): the keeper ends it for the rank.
func TestRelayEndsABarrierTheAgentEnded(t *testing.T) {
	g := newRelayRig(t, 2*time.Second)
	g.roundTrip("cmd=put kvsname=k key=a value=1", "cmd=put_result rc=0")
	send(t, g.prog, "cmd=barrier_in")
	expect(t, g.agent, "cmd=barrier_in")
	g.die("cmd=cosched_resume job=7 rank=1 barriers=0 inited=1 finalized=0", 1)
	expect(t, g.prog, "cmd=barrier_out rc=0")
	g.roundTrip("cmd=finalize", "cmd=finalize_ack rc=0")
}

// No agent comes back within the grace: the keeper shuts the program's
// PMI socket, so that its next PMI call fails rather than hangs.
func TestRelayGivesUpAfterTheGrace(t *testing.T) {
	g := newRelayRig(t, 300*time.Millisecond)
	g.roundTrip("cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init rc=0")
	g.ln.Close()
	g.aconn.Close()
	if l, err := g.prog.ReadString('\n'); err == nil {
		t.Fatalf("the program read %q, want its socket shut", l)
	}
}

// What a keeper's relay adds to a PMI command's round trip: a program
// sends a line and waits for the answer from an agent that echoes it,
// over a socketpair ("direct", as without --keep-ranks) and through a
// keeper's relay ("relayed"). Compare the two ns/op of one run.
func BenchmarkPMIRoundTrip(b *testing.B) {
	line := "cmd=get kvsname=cosched_1 key=P0-businesscard\n"
	echo := func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := c.Write([]byte(l)); err != nil {
				return
			}
		}
	}
	run := func(b *testing.B, prog net.Conn) {
		r := bufio.NewReader(prog)
		b.ResetTimer()
		for range b.N {
			if _, err := prog.Write([]byte(line)); err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
		}
	}
	pair := func(b *testing.B) (int, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		return fds[0], fds[1]
	}
	conn := func(b *testing.B, fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "bench")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	b.Run("direct", func(b *testing.B) {
		a, p := pair(b)
		go echo(conn(b, a))
		run(b, conn(b, p))
	})
	b.Run("relayed", func(b *testing.B) {
		a, up := pair(b)
		r, progFD, err := newPMIRelay("addr=@cosched-bench-unused job=1 rank=0 grace=1ms", up)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.prog.Close() })
		r.start()
		go echo(conn(b, a))
		run(b, conn(b, progFD))
	})
}
