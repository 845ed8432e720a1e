package strobe

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// inNetns creates a network namespace whose loopback carries multicast
// (224.0.0.0/4 routed to lo) and runs open on a thread inside it, so that
// the sockets open creates live there; the namespace is deleted when the
// test ends (the sockets keep it alive until closed). It skips the test
// without root or the ip command.
func inNetns(t *testing.T, open func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	name := fmt.Sprintf("i17-barrier-mc-%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", name).Run() })
	run("-n", name, "link", "set", "lo", "up", "multicast", "on")
	run("-n", name, "route", "add", "224.0.0.0/4", "dev", "lo")

	errc := make(chan error, 1)
	go func() {
		// The thread enters the namespace and never leaves: it is not
		// unlocked, so the runtime ends it with the goroutine.
		runtime.LockOSThread()
		ns, err := os.Open("/run/netns/" + name)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		open()
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// countingTransport counts the datagrams sent through it.
type countingTransport struct {
	Transport
	sent atomic.Uint64
}

func (c *countingTransport) Send(to string, data []byte) error {
	c.sent.Add(1)
	return c.Transport.Send(to, data)
}

// Strobes as IP multicast: the controller sends one datagram per slice to
// the group, every agent's Follower (joined to it) applies every slice,
// in order, and heartbeats the controller as with unicast strobes.
func TestMulticastStrobes(t *testing.T) {
	checkLeaks(t)
	const group, agents, slices = "239.77.0.1:17950", 3, 6
	log := zaptest.NewLogger(t)
	var ctl *countingTransport
	var unicast, multicast []Transport
	var openErr error
	inNetns(t, func() {
		tr, err := ListenUDP("127.0.0.1:0", log)
		if err != nil {
			openErr = err
			return
		}
		ctl = &countingTransport{Transport: tr}
		for range agents {
			u, err := ListenUDP("127.0.0.1:0", log)
			if err != nil {
				openErr = err
				return
			}
			unicast = append(unicast, u)
			m, err := ListenMulticastUDP(group, "lo", log)
			if err != nil {
				openErr = err
				return
			}
			multicast = append(multicast, m)
		}
	})
	for _, tr := range append(append([]Transport{ctl}, unicast...), multicast...) {
		if tr != nil {
			t.Cleanup(func() { tr.Close() })
		}
	}
	if openErr != nil {
		t.Fatal(openErr)
	}
	var logs [agents]switchLog
	var fs []*Follower
	for i := range agents {
		f := NewFollower(FollowerConfig{Name: fmt.Sprintf("a%d", i), Transport: unicast[i], Multicast: multicast[i], Switch: logs[i].Switch, Log: log})
		fs = append(fs, f)
		runFollower(t, f)
	}
	s := NewSender(ctl, 1, log)
	s.SetMulticast(group)
	targets := []string{unicast[0].LocalAddr(), unicast[1].LocalAddr(), unicast[2].LocalAddr()}
	heard := 0
	for seq := uint64(1); seq <= slices; seq++ {
		if _, err := s.Strobe(targets, seq, int(seq%2), 1, 0); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			eventually(t, fmt.Sprintf("slice %d applied", seq), func() bool { return f.Stats().LastSeq == seq })
		}
		for heard < agents*int(seq) { // each agent's heartbeat comes back to the controller's unicast address
			p := recv(t, ctl)
			if m, err := Unmarshal(p.Data); err != nil || m.MsgType() != TypeHeartbeat {
				t.Fatalf("controller got %v (%v)", m, err)
			}
			heard++
		}
	}
	if got := ctl.sent.Load(); got != slices {
		t.Fatalf("the controller sent %d datagrams for %d slices to %d agents, want one a slice", got, slices, agents)
	}
	for i, f := range fs {
		st := f.Stats()
		if st.Applied != slices || st.Multicast != slices || st.Lost != 0 || st.Late != 0 || len(logs[i].Rows()) != slices {
			t.Fatalf("agent %d: %+v, rows %v", i, st, logs[i].Rows())
		}
	}
	// A heartbeat sent to the group is not a strobe: dropped and counted.
	hb, _ := Marshal(&Heartbeat{From: "x", Epoch: 1, Seq: 1})
	if err := ctl.Send(group, hb); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the heartbeat on the multicast socket dropped", func() bool { return fs[0].Stats().Unknown == 1 })
}
