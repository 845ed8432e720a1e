package strobe

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// inNetns creates a network namespace whose loopback carries multicast
// (224.0.0.0/4 routed to lo) and runs open on a thread inside it, so that
// the sockets open creates live there; the namespace is deleted when the
// test ends (the sockets keep it alive until closed). It skips the test
// without root or the ip command.
func inNetns(t testing.TB, open func()) {
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

// countingTransport counts the datagrams sent through it and keeps the
// last one.
type countingTransport struct {
	Transport
	sent atomic.Uint64
	last atomic.Pointer[[]byte]
}

func (c *countingTransport) Send(to string, data []byte) error {
	c.sent.Add(1)
	d := slices.Clone(data)
	c.last.Store(&d)
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

// threadSwitch is a SwitchFunc that records, for every switch, the
// thread it ran on and that thread's scheduling policy.
type threadSwitch struct {
	mu       sync.Mutex
	tids     []int
	policies []uint32
}

func (s *threadSwitch) Switch(int) time.Duration {
	policy := uint32(999) // sched_getattr failed
	if a, err := unix.SchedGetAttr(0, 0); err == nil {
		policy = a.Policy
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tids = append(s.tids, unix.Gettid())
	s.policies = append(s.policies, policy)
	return 0
}

func (s *threadSwitch) seen() (tids []int, policies []uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tids), slices.Clone(s.policies)
}

// A Follower whose multicast socket is a RealtimeUDP switches on that
// socket's real-time thread: every strobe from the group, sealed with the
// cluster key, is applied by one thread at SCHED_FIFO (the test's other
// threads are at the normal policy), and a strobe on the unicast
// real-time socket by that socket's thread, another one, also at
// SCHED_FIFO. A replayed group strobe is counted and not applied.
func TestMulticastStrobesRealtime(t *testing.T) {
	checkLeaks(t)
	const group, slices = "239.77.0.2:17952", 5
	key := testKey(t, 1)
	log := zaptest.NewLogger(t)
	tr, uni, mc := realtimeSockets(t, group, "lo", 1, 1, log)
	ctl := &countingTransport{Transport: tr}
	var sw threadSwitch
	f := NewFollower(FollowerConfig{Name: "a", Transport: uni, Multicast: mc, Switch: sw.Switch, Auth: NewAuth(key, "a"), Log: log})
	runFollower(t, f)
	s := NewSender(ctl, 1, log)
	s.SetAuth(NewAuth(key, "ctl"))
	s.SetMulticast(group)
	for seq := uint64(1); seq <= slices; seq++ {
		if _, err := s.Strobe([]string{uni.LocalAddr()}, seq, int(seq%2), 1, 0); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("slice %d applied", seq), func() bool { return f.Stats().LastSeq == seq })
	}
	// The last group strobe again: replayed, counted, not applied.
	if err := ctl.Transport.Send(group, *ctl.last.Load()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replayed group strobe counted", func() bool { return f.Stats().StrobesReplayed == 1 })
	// The next slice by unicast: the strobe socket's own real-time thread.
	s.SetMulticast("")
	if _, err := s.Strobe([]string{uni.LocalAddr()}, slices+1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unicast slice applied", func() bool { return f.Stats().LastSeq == slices+1 })
	if err := mc.RealtimeError(); err != nil {
		t.Fatalf("multicast receive thread without real-time priority: %v", err)
	}
	tids, policies := sw.seen()
	if len(tids) != slices+1 {
		t.Fatalf("%d switches, want %d", len(tids), slices+1)
	}
	for i, p := range policies {
		if p != unix.SCHED_FIFO {
			t.Errorf("switch %d ran on thread %d at policy %d, want SCHED_FIFO (%d)", i+1, tids[i], p, unix.SCHED_FIFO)
		}
	}
	for i := 1; i < slices; i++ {
		if tids[i] != tids[0] {
			t.Errorf("multicast switches on threads %v: want one receive thread", tids[:slices])
			break
		}
	}
	if tids[slices] == tids[0] {
		t.Errorf("the unicast switch ran on the multicast thread %d", tids[0])
	}
	if tid := unix.Gettid(); tid == tids[0] || tid == tids[slices] {
		t.Errorf("the test's thread %d switched", tid)
	}
	if pol, err := unix.SchedGetAttr(0, 0); err != nil || pol.Policy == unix.SCHED_FIFO {
		t.Fatalf("the test's own thread is at policy %v (%v): the check proves nothing", pol, err)
	}
	st := f.Stats()
	if st.Applied != slices+1 || st.Multicast != slices || st.Lost != 0 || st.Late != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// BenchmarkRealtimeStrobePath compares, over loopback in a network
// namespace with multicast, sealed as keyed agents' strobes are, the
// strobe path of three Followers, one strobe each per iteration in turn:
// unicast to a RealtimeUDP (the baseline), multicast to a RealtimeUDP
// (ListenMulticastUDPRealtime) and multicast to an ordinary socket read
// by a goroutine (the design before). It reports the median
// and p99 strobe-to-switch (the Sender's stamp to the switch) and the
// median handling (the socket read to the switch) of each, and their
// ratios: multicast RT to unicast RT, the goroutine to multicast RT.
// "busy" runs a spinning process on every CPU at the normal policy, as
// ranks would be. The strobes are sent from a SCHED_FIFO thread, as the
// controller's are; it needs root for SCHED_FIFO.
func BenchmarkRealtimeStrobePath(b *testing.B) {
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "busy"
		}
		b.Run(name, func(b *testing.B) { benchmarkRealtimeStrobePath(b, busy) })
	}
}

func benchmarkRealtimeStrobePath(b *testing.B, busy bool) {
	type setting struct {
		name   string
		group  string // "": unicast
		rt     bool
		f      *Follower
		sender *Sender
		target string
	}
	settings := []*setting{
		{name: "unicast-rt", rt: true},
		{name: "multicast-rt", group: "239.77.0.3:17953", rt: true},
		{name: "multicast-goroutine", group: "239.77.0.4:17954"},
	}
	key := testKey(b, 1)
	var closers []Transport
	var openErr error
	inNetns(b, func() {
		for _, s := range settings {
			ctl, err := ListenUDP("127.0.0.1:0", nil)
			if err != nil {
				openErr = err
				return
			}
			closers = append(closers, ctl)
			var uni, mc Transport
			if s.rt {
				uni, err = ListenUDPRealtime("127.0.0.1:0", 50, nil)
			} else {
				uni, err = ListenUDP("127.0.0.1:0", nil)
			}
			if err != nil {
				openErr = err
				return
			}
			closers = append(closers, uni)
			switch {
			case s.group != "" && s.rt:
				mc, err = ListenMulticastUDPRealtime(s.group, "lo", 50, nil)
			case s.group != "":
				mc, err = ListenMulticastUDP(s.group, "lo", nil)
			}
			if err != nil {
				openErr = err
				return
			}
			if mc != nil {
				closers = append(closers, mc)
			}
			s.f = NewFollower(FollowerConfig{Name: "f", Transport: uni, Multicast: mc, Switch: func(int) time.Duration { return 0 },
				Auth: NewAuth(key, "f"), History: 1 << 16})
			s.sender = NewSender(ctl, 1, nil)
			s.sender.SetAuth(NewAuth(key, "ctl"))
			s.sender.SetMulticast(s.group)
			s.target = uni.LocalAddr()
		}
	})
	defer func() {
		for _, tr := range closers {
			tr.Close()
		}
	}()
	if openErr != nil {
		b.Fatal(openErr)
	}
	for _, s := range settings {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.f.Run(ctx) }()
		defer func() { cancel(); <-done }()
	}
	if busy {
		for range runtime.NumCPU() {
			spin := exec.Command("sh", "-c", "while :; do :; done")
			if err := spin.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { spin.Process.Kill(); spin.Wait() }()
		}
	}
	// The strobes leave from a SCHED_FIFO thread, as the controller's
	// (its Ticker's): the tail is the receivers', not the sender's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := setThreadFIFO(50)
	defer restore()
	if err != nil {
		b.Logf("sending at the normal policy: %v", err)
	}
	seq := uint64(0)
	for b.Loop() {
		seq++
		for _, s := range settings {
			if _, err := s.sender.Strobe([]string{s.target}, seq, int(seq%2), 1, 0); err != nil {
				b.Fatal(err)
			}
			for s.f.Stats().LastSeq != seq {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	quantile := func(v []int64, q float64) float64 {
		slices.Sort(v)
		return float64(v[int(q*float64(len(v)-1))])
	}
	var e2e, e2e99, handle []float64
	for _, s := range settings {
		var h, e []int64
		for _, r := range s.f.Records() {
			h = append(h, r.SwitchedMono-r.RecvMono)
			e = append(e, r.SwitchedMono-r.SentMono)
		}
		if st := s.f.Stats(); st.Applied != seq || (s.group != "" && st.Multicast != seq) {
			b.Fatalf("%s: %+v after %d strobes", s.name, st, seq)
		}
		e2e, e2e99, handle = append(e2e, quantile(e, 0.5)), append(e2e99, quantile(e, 0.99)), append(handle, quantile(h, 0.5))
		b.ReportMetric(e2e[len(e2e)-1], s.name+"-strobe-to-switch-ns")
		b.ReportMetric(e2e99[len(e2e99)-1], s.name+"-strobe-to-switch-p99-ns")
		b.ReportMetric(handle[len(handle)-1], s.name+"-handle-ns")
	}
	b.ReportMetric(e2e[1]/e2e[0], "strobe-to-switch-mc-rt/uni-rt")
	b.ReportMetric(e2e[2]/e2e[1], "strobe-to-switch-mc-goroutine/mc-rt")
	b.ReportMetric(e2e99[1]/e2e99[0], "p99-mc-rt/uni-rt")
	b.ReportMetric(e2e99[2]/e2e99[1], "p99-mc-goroutine/mc-rt")
	b.ReportMetric(handle[1]/handle[0], "handle-mc-rt/uni-rt")
}

// A multicast socket whose thread cannot have SCHED_FIFO (here an
// out-of-range priority; without CAP_SYS_NICE the same path) warns, says
// why in RealtimeError, and applies strobes from the group at the normal
// policy.
func TestMulticastStrobesRealtimeRefused(t *testing.T) {
	checkLeaks(t)
	const group = "239.77.0.5:17955"
	log := zaptest.NewLogger(t)
	ctl, uni, mc := realtimeSockets(t, group, "", 0, 100, log)
	var sw threadSwitch
	f := NewFollower(FollowerConfig{Name: "a", Transport: uni, Multicast: mc, Switch: sw.Switch, Log: log})
	runFollower(t, f)
	s := NewSender(ctl, 1, log)
	s.SetMulticast(group)
	for seq := uint64(1); seq <= 2; seq++ {
		if _, err := s.Strobe([]string{uni.LocalAddr()}, seq, 1, 1, 0); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("slice %d applied", seq), func() bool { return f.Stats().LastSeq == seq })
	}
	if err := mc.RealtimeError(); err == nil || !strings.Contains(err.Error(), "want 1 to 99") {
		t.Fatalf("RealtimeError = %v, want the refused priority", err)
	}
	if _, policies := sw.seen(); len(policies) != 2 || policies[0] != unix.SCHED_NORMAL || policies[1] != unix.SCHED_NORMAL {
		t.Fatalf("switch policies %v, want two at SCHED_NORMAL", policies)
	}
	if st := f.Stats(); st.Multicast != 2 || st.Applied != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// A group that is not an IPv4 multicast address and port, or an
// interface that does not exist, is refused with an error naming it.
func TestListenMulticastUDPRealtimeErrors(t *testing.T) {
	for _, c := range []struct{ group, ifname, want string }{
		{"10.0.0.1:7950", "", "strobe: multicast group 10.0.0.1:7950: want an IPv4 multicast address"},
		{"239.1.2.3:0", "", "strobe: multicast group 239.1.2.3:0: want"},
		{"239.1.2.3", "", "strobe: multicast group 239.1.2.3: want"},
		{"[ff02::1]:7950", "", "strobe: multicast group [ff02::1]:7950: want an IPv4"},
		{"239.1.2.3:7950", "no-such-if0", "interface no-such-if0"},
	} {
		tr, err := ListenMulticastUDPRealtime(c.group, c.ifname, 1, nil)
		if err == nil {
			tr.Close()
			t.Errorf("%s on %q: no error", c.group, c.ifname)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %q: %v, want %q", c.group, c.ifname, err, c.want)
		}
	}
}

// realtimeSockets opens, in a network namespace of the test's, the
// controller's socket, an agent's real-time unicast socket at uniPrio and
// its real-time socket of group on ifname at mcPrio; they close when the
// test ends.
func realtimeSockets(t *testing.T, group, ifname string, uniPrio, mcPrio int, log *zap.Logger) (ctl Transport, uni, mc *RealtimeUDP) {
	t.Helper()
	var openErr error
	inNetns(t, func() {
		if ctl, openErr = ListenUDP("127.0.0.1:0", log); openErr != nil {
			return
		}
		if uni, openErr = ListenUDPRealtime("127.0.0.1:0", uniPrio, log); openErr != nil {
			return
		}
		mc, openErr = ListenMulticastUDPRealtime(group, ifname, mcPrio, log)
	})
	for _, tr := range []Transport{ctl, uni, mc} {
		if tr != nil && !reflect.ValueOf(tr).IsNil() {
			t.Cleanup(func() { tr.Close() })
		}
	}
	if openErr != nil {
		t.Fatal(openErr)
	}
	return ctl, uni, mc
}
