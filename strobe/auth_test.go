package strobe

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/clusterkey"
)

func testKey(t testing.TB, fill byte) *clusterkey.Key {
	t.Helper()
	k, err := clusterkey.Parse(bytes.Repeat([]byte{fill}, clusterkey.Size))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func listen(t *testing.T) Transport {
	t.Helper()
	tr, err := ListenUDP("127.0.0.1:0", zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// heartbeatLog is a HeartbeatFunc that records what it was given.
type heartbeatLog struct {
	mu  sync.Mutex
	hbs []Heartbeat
}

func (h *heartbeatLog) add(hb Heartbeat, _ int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hbs = append(h.hbs, hb)
}

func (h *heartbeatLog) all() []Heartbeat {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.hbs)
}

// TestAuthenticatedStrobesOverUDP: a Follower with the key, over real UDP
// sockets, applies genuine strobes and heartbeats, and drops (and counts)
// strobes sealed with another key, unsealed ones, and replays of genuine
// strobes and heartbeats captured on the wire: none of them switches a row
// or reaches the HeartbeatFunc.
func TestAuthenticatedStrobesOverUDP(t *testing.T) {
	checkLeaks(t)
	key := testKey(t, 1)
	ctlTr, tap, attacker := listen(t), listen(t), listen(t)
	strobeTr, hbTr, peerHB := listen(t), listen(t), listen(t)
	sw := &switchLog{}
	heard := &heartbeatLog{}
	f := NewFollower(FollowerConfig{Name: "n1", Transport: strobeTr, Heartbeats: hbTr, Switch: sw.Switch,
		Heartbeat: heard.add, Auth: NewAuth(key, "n1"), Log: zaptest.NewLogger(t)})
	f.SetPeers([]string{peerHB.LocalAddr()})
	runFollower(t, f)

	ctl := NewSender(ctlTr, 5, nil)
	ctl.SetAuth(NewAuth(key, "ctl"))
	next := uint64(0)
	strobeTo := func(s *Sender, row int, targets ...string) {
		t.Helper()
		next++
		if _, err := s.Strobe(targets, next, row, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	applied := func(n uint64) {
		t.Helper()
		eventually(t, "strobe applied", func() bool { return f.Stats().Applied == n })
	}

	// Genuine strobes apply; the tap sees what the follower saw.
	strobeTo(ctl, 1, strobeTr.LocalAddr(), tap.LocalAddr())
	applied(1)
	captured := recv(t, tap).Data
	if !bytes.HasPrefix(captured, []byte("cK")) {
		t.Fatalf("the strobe on the wire is not sealed: %x", captured)
	}
	// Its heartbeat, to the peer, is sealed too.
	hbWire := recv(t, peerHB).Data
	if _, err := NewAuth(key, "peer").open(hbWire, make(replayWindows), TypeHeartbeat, nil); err != nil {
		t.Fatalf("the follower's heartbeat does not open with the key: %v", err)
	}

	// Forged: the right format under another key, and no seal at all.
	forger := NewSender(attacker, 5, nil)
	forger.SetAuth(NewAuth(testKey(t, 2), "ctl"))
	strobeTo(forger, 7, strobeTr.LocalAddr())
	plain := mustMarshal(t, &Strobe{Epoch: 5, Seq: next + 1, Row: 7})
	if err := attacker.Send(strobeTr.LocalAddr(), plain); err != nil {
		t.Fatal(err)
	}
	// Replayed: the genuine strobe again, from the attacker's socket.
	if err := attacker.Send(strobeTr.LocalAddr(), captured); err != nil {
		t.Fatal(err)
	}
	// A genuine heartbeat, then the same heartbeat replayed.
	peer := NewAuth(key, "n2")
	hb, err := peer.encode(&Heartbeat{From: "n2", Epoch: 5, Seq: 1, Data: []byte("cut")})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := attacker.Send(hbTr.LocalAddr(), hb); err != nil {
			t.Fatal(err)
		}
	}
	// A forged heartbeat.
	forgedHB, _ := NewAuth(testKey(t, 3), "n2").encode(&Heartbeat{From: "n2", Epoch: 5, Seq: 2})
	if err := attacker.Send(hbTr.LocalAddr(), forgedHB); err != nil {
		t.Fatal(err)
	}

	// Genuine packets on the wrong socket: a heartbeat to the strobe
	// socket, a strobe to the heartbeat socket. Dropped (Unknown) before
	// their numbers are spent.
	hbElsewhere, _ := peer.encode(&Heartbeat{From: "n2", Epoch: 5, Seq: 3})
	if err := attacker.Send(strobeTr.LocalAddr(), hbElsewhere); err != nil {
		t.Fatal(err)
	}
	strobeTo(ctl, 9, hbTr.LocalAddr())
	next-- // that number was not seen on the strobe socket

	// A genuine strobe after all of them is a barrier on the strobe
	// socket; the heartbeat socket's counts settle on their own.
	strobeTo(ctl, 2, strobeTr.LocalAddr())
	applied(2)
	eventually(t, "heartbeats counted", func() bool {
		s := f.Stats()
		return s.HeartbeatsReplayed == 1 && s.HeartbeatsForged == 1 && s.Unknown == 2
	})
	st := f.Stats()
	if got := sw.Rows(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("rows switched to %v, want [1 2]: a forged or replayed strobe switched", got)
	}
	if st.StrobesForged != 2 || st.StrobesReplayed != 1 || st.Late != 0 || st.Lost != 1 || st.Malformed != 0 {
		// Lost 1: the forger's Seq was spent by it, not by the controller.
		t.Errorf("stats %+v: want 2 strobes forged, 1 replayed, none late", st)
	}
	if got := heard.all(); len(got) != 1 || string(got[0].Data) != "cut" {
		t.Errorf("heartbeats delivered %+v, want the genuine one once", got)
	}
}

// TestUnkeyedFollowerDropsSealed: a Follower without a key neither
// applies sealed strobes nor mistakes them for garbage: they are Unknown
// (another protocol version), and unsealed strobes still apply.
func TestUnkeyedFollowerDropsSealed(t *testing.T) {
	checkLeaks(t)
	ctlTr, strobeTr := listen(t), listen(t)
	sw := &switchLog{}
	f := NewFollower(FollowerConfig{Name: "n1", Transport: strobeTr, Switch: sw.Switch})
	runFollower(t, f)
	sealed := NewSender(ctlTr, 1, nil)
	sealed.SetAuth(NewAuth(testKey(t, 1), "ctl"))
	if _, err := sealed.Strobe([]string{strobeTr.LocalAddr()}, 1, 3, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSender(ctlTr, 1, nil).Strobe([]string{strobeTr.LocalAddr()}, 2, 4, 1, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "plain strobe applied", func() bool { return f.Stats().Applied == 1 })
	if st := f.Stats(); st.Unknown != 1 || !slices.Equal(sw.Rows(), []int{4}) {
		t.Errorf("stats %+v rows %v: want the sealed strobe counted unknown, the plain one applied", st, sw.Rows())
	}
}

// TestAuthFanout: strobes forwarded along the fan-out tree are sealed by
// the forwarding agent, and every agent of a keyed cluster applies them.
func TestAuthFanout(t *testing.T) {
	checkLeaks(t)
	key := testKey(t, 1)
	ctlTr := listen(t)
	const n = 7
	var fs []*Follower
	var targets []string
	for i := range n {
		tr := listen(t)
		name := string(rune('a' + i))
		f := NewFollower(FollowerConfig{Name: name, Transport: tr, Switch: func(int) time.Duration { return 0 }, Auth: NewAuth(key, name)})
		runFollower(t, f)
		fs = append(fs, f)
		targets = append(targets, tr.LocalAddr())
	}
	s := NewSender(ctlTr, 1, nil)
	s.SetAuth(NewAuth(key, "ctl"))
	s.SetFanout(2)
	for seq := uint64(1); seq <= 3; seq++ {
		if _, err := s.Strobe(targets, seq, int(seq), 1, 0); err != nil {
			t.Fatal(err)
		}
		for i, f := range fs {
			eventually(t, "every agent applied the slice", func() bool { return f.Stats().LastSeq == seq })
			if st := f.Stats(); st.StrobesForged+st.StrobesReplayed+st.Malformed != 0 {
				t.Fatalf("agent %d: %+v", i, st)
			}
		}
	}
	var forwarded uint64
	for _, f := range fs {
		forwarded += f.Stats().Forwarded
	}
	if forwarded == 0 {
		t.Error("no strobe went along the tree")
	}
}

// TestAuthSequence: sequence numbers increase by one per packet, jump to
// the clock when they fall a second behind it, and a restarted node (a new
// Auth, a later clock) starts above every number it used before, so a
// receiver that remembers it accepts it.
func TestAuthSequence(t *testing.T) {
	key := testKey(t, 1)
	clock := int64(1e18)
	a := newAuthClock(key, "n", func() int64 { return clock })
	var w clusterkey.ReplayWindow
	var last uint64
	for i := range 10 {
		seq := a.nextSeq()
		if i > 0 && seq != last+1 {
			t.Fatalf("packet %d: seq %d after %d", i, seq, last)
		}
		if !w.Accept(seq) {
			t.Fatalf("window refused %d", seq)
		}
		last = seq
	}
	clock += 2 * seqResync
	if seq := a.nextSeq(); seq != uint64(clock) {
		t.Errorf("after two seconds: seq %d, want the clock %d", seq, clock)
	}
	for range 1000 { // a thousand packets, then the node restarts a microsecond later
		last = a.nextSeq()
	}
	if !w.Accept(last) {
		t.Fatal("window refused a later number")
	}
	clock += 1000
	b := newAuthClock(key, "n", func() int64 { return clock })
	if seq := b.nextSeq(); seq <= last || !w.Accept(seq) {
		t.Errorf("restarted node's first seq %d, not above %d", seq, last)
	}
}

// TestAuthOpenErrors: what open says about each kind of bad packet.
func TestAuthOpenErrors(t *testing.T) {
	key := testKey(t, 1)
	rx := NewAuth(key, "rx")
	tx := NewAuth(key, "tx")
	good, _ := tx.encode(&Strobe{Epoch: 1, Seq: 1})
	v1inSeal, _ := key.Seal(nil, clusterkey.Envelope{Sender: 9, Seq: 1}, mustMarshal(t, &Strobe{Epoch: 1, Seq: 1}))
	cases := []struct {
		name string
		pkt  []byte
		only MsgType
		want error
	}{
		{"empty", nil, 0, ErrForged},
		{"unsealed", mustMarshal(t, &Strobe{Epoch: 1, Seq: 1}), 0, ErrForged},
		{"truncated", good[:len(good)-1], 0, ErrForged},
		{"oversize", make([]byte, MaxPacketSize+clusterkey.Overhead+1), 0, ErrForged},
		{"version 1 inside a seal", v1inSeal, 0, ErrVersion},
		{"strobe on the heartbeat socket", good, TypeHeartbeat, ErrUnknownType},
	}
	for _, c := range cases {
		if _, err := rx.open(c.pkt, make(replayWindows), c.only, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	w := make(replayWindows)
	if _, err := rx.open(good, w, TypeHeartbeat, nil); err == nil {
		t.Fatal("strobe accepted on the heartbeat socket")
	}
	if _, err := rx.open(good, w, 0, nil); err != nil {
		t.Errorf("a strobe refused on the heartbeat socket then came to the strobe socket: %v", err)
	}
	if m, err := rx.open(good, w, 0, nil); !errors.Is(err, ErrReplayed) || m.MsgType() != TypeStrobe {
		t.Errorf("second time: %v, %v", m, err)
	}
	if _, err := (*Auth)(nil).open(good, nil, 0, nil); !errors.Is(err, ErrVersion) {
		t.Errorf("no key, sealed packet: %v", err)
	}
}

// TestLogLimiter: one line a period, the rest counted and reported with
// the next line.
func TestLogLimiter(t *testing.T) {
	var l logLimiter
	const sec = int64(1e9)
	steps := []struct {
		now        int64
		ok         bool
		suppressed uint64
	}{{10 * sec, true, 0}, {10*sec + 1, false, 0}, {10*sec + 2, false, 0}, {11 * sec, true, 2}, {11*sec + 5, false, 0}, {13 * sec, true, 1}}
	for i, s := range steps {
		if ok, n := l.allow(s.now, rejectLogEvery); ok != s.ok || n != s.suppressed {
			t.Errorf("step %d: allow = %v, %d; want %v, %d", i, ok, n, s.ok, s.suppressed)
		}
	}
}

// FuzzOpenSealed: arbitrary bytes never panic a keyed receiver, every
// error is a documented kind, and whatever opens is a valid message that
// the same receiver then refuses as a replay.
func FuzzOpenSealed(f *testing.F) {
	key := testKey(f, 1)
	tx := NewAuth(key, "tx")
	for _, m := range []Message{
		&Strobe{Epoch: 1, Seq: 1, Row: 2, SentMono: 3, Fanout: 2, Forward: []string{"a:1", "b:2"}},
		&Heartbeat{From: "n1", Epoch: 1, Seq: 1, Data: []byte("data"), Part: 1, Parts: 2},
	} {
		b, err := tx.encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(mustMarshal(f, m))
	}
	f.Add([]byte("cK\x02"))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		rx := NewAuth(key, "rx")
		w := make(replayWindows)
		m, err := rx.open(pkt, w, 0, nil)
		if err != nil {
			if !errors.Is(err, ErrForged) && !errors.Is(err, ErrReplayed) && !errors.Is(err, ErrMalformed) &&
				!errors.Is(err, ErrVersion) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("undocumented error kind: %v", err)
			}
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("opened an invalid message %+v: %v", m, err)
		}
		if _, err := rx.open(pkt, w, 0, nil); !errors.Is(err, ErrReplayed) {
			t.Fatalf("the same packet twice: %v", err)
		}
	})
}

// BenchmarkStrobeSealOpen is the per-packet cost of an authenticated
// strobe: encode and seal at the sender, open, check and decode at the
// receiver. BenchmarkStrobeEncodeDecode, the same without the key, is
// its baseline.
func BenchmarkStrobeSealOpen(b *testing.B) {
	tx, rx := NewAuth(testKey(b, 1), "tx"), NewAuth(testKey(b, 1), "rx")
	w := make(replayWindows)
	st := &Strobe{Epoch: 1 << 60, Seq: 1, Row: 1, MemberEpoch: 3, SentMono: 1 << 50, DueMono: 1 << 50}
	for b.Loop() {
		pkt, err := tx.encode(st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rx.open(pkt, w, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStrobeEncodeDecode(b *testing.B) {
	st := &Strobe{Epoch: 1 << 60, Seq: 1, Row: 1, MemberEpoch: 3, SentMono: 1 << 50, DueMono: 1 << 50}
	for b.Loop() {
		pkt, err := (*Auth)(nil).encode(st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := (*Auth)(nil).open(pkt, nil, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrobeAuthRatio alternates blocks of sealed and unsealed
// round trips (encode at the sender, decode at the receiver) so that both
// see the same machine load, and reports each one's time per packet and
// their ratio: the figure to quote on a shared, noisy host.
func BenchmarkStrobeAuthRatio(b *testing.B) {
	tx, rx := NewAuth(testKey(b, 1), "tx"), NewAuth(testKey(b, 1), "rx")
	w := make(replayWindows)
	st := &Strobe{Epoch: 1 << 60, Seq: 1, Row: 1, MemberEpoch: 3, SentMono: 1 << 50, DueMono: 1 << 50}
	roundTrip := func(a, r *Auth, w replayWindows) {
		pkt, err := a.encode(st)
		if err == nil {
			_, err = r.open(pkt, w, 0, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	const block = 256
	var sealed, plain time.Duration
	n := 0
	for b.Loop() {
		if n%block == 0 {
			t0 := time.Now()
			for range block {
				roundTrip(tx, rx, w)
			}
			t1 := time.Now()
			for range block {
				roundTrip(nil, nil, nil)
			}
			sealed += t1.Sub(t0)
			plain += time.Since(t1)
		}
		n++
	}
	packets := float64((n + block - 1) / block * block)
	b.ReportMetric(float64(sealed.Nanoseconds())/packets, "sealed-ns/pkt")
	b.ReportMetric(float64(plain.Nanoseconds())/packets, "plain-ns/pkt")
	b.ReportMetric(float64(sealed)/float64(plain), "sealed/plain")
}

// BenchmarkUDPStrobePath measures a Follower's strobe path over real UDP
// on loopback, sealed and unsealed in alternating blocks: handling (from
// the socket read to the switch: open, decode, sequence rules) and
// strobe-to-switch (from the Sender's send). Reported as the median of
// each, per setting, and the sealed/unsealed ratios.
func BenchmarkUDPStrobePath(b *testing.B) {
	type setting struct {
		name        string
		auth        *Auth
		f           *Follower
		sender      *Sender
		addr        string
		handle, e2e []int64
	}
	key := testKey(b, 1)
	var settings []*setting
	for _, sealed := range []bool{false, true} {
		s := &setting{name: "unsealed"}
		if sealed {
			s.name, s.auth = "sealed", NewAuth(key, "f")
		}
		tr, err := ListenUDP("127.0.0.1:0", nil)
		if err != nil {
			b.Fatal(err)
		}
		ctlTr, err := ListenUDP("127.0.0.1:0", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		defer ctlTr.Close()
		s.f = NewFollower(FollowerConfig{Name: "f", Transport: tr, Switch: func(int) time.Duration { return 0 }, Auth: s.auth, History: 1 << 16})
		s.sender = NewSender(ctlTr, 1, nil)
		if sealed {
			s.sender.SetAuth(NewAuth(key, "ctl"))
		}
		s.addr = tr.LocalAddr()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.f.Run(ctx) }()
		defer func() { cancel(); <-done }()
		settings = append(settings, s)
	}
	seq := uint64(0)
	for b.Loop() {
		seq++
		for _, s := range settings {
			if _, err := s.sender.Strobe([]string{s.addr}, seq, int(seq%2), 1, 0); err != nil {
				b.Fatal(err)
			}
			for s.f.Stats().LastSeq != seq {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	median := func(v []int64) float64 {
		slices.Sort(v)
		return float64(v[len(v)/2])
	}
	res := map[string][2]float64{}
	for _, s := range settings {
		for _, r := range s.f.Records() {
			s.handle = append(s.handle, r.SwitchedMono-r.RecvMono)
			s.e2e = append(s.e2e, r.SwitchedMono-r.SentMono)
		}
		res[s.name] = [2]float64{median(s.handle), median(s.e2e)}
		b.ReportMetric(res[s.name][0], s.name+"-handle-ns")
		b.ReportMetric(res[s.name][1], s.name+"-strobe-to-switch-ns")
	}
	b.ReportMetric(res["sealed"][0]/res["unsealed"][0], "handle-sealed/unsealed")
	b.ReportMetric(res["sealed"][1]/res["unsealed"][1], "strobe-to-switch-sealed/unsealed")
}

// BenchmarkStrobeAuthCold is BenchmarkStrobeAuthRatio with cold caches,
// as on the strobe path, which runs once a slice while busy ranks evict
// its code and data: before each round trip a 32 MB buffer is written
// through. It reports the median sealed and unsealed round trips
// (alternating) and, for the sealed one, the seal at the sender and the
// open at the receiver alone (themselves cold, measured separately).
func BenchmarkStrobeAuthCold(b *testing.B) {
	tx, rx := NewAuth(testKey(b, 1), "tx"), NewAuth(testKey(b, 1), "rx")
	w := make(replayWindows)
	st := &Strobe{Epoch: 1 << 60, Seq: 1, Row: 1, MemberEpoch: 3, SentMono: 1 << 50, DueMono: 1 << 50}
	evict := make([]byte, 32<<20)
	thrash := func() {
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
	}
	roundTrip := func(a, r *Auth, w replayWindows) int64 {
		thrash()
		t0 := time.Now()
		pkt, err := a.encode(st)
		if err == nil {
			_, err = r.open(pkt, w, 0, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		return int64(time.Since(t0))
	}
	var plain, sealed, seal, open []int64
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 { // alternate which goes first
			plain = append(plain, roundTrip(nil, nil, nil))
			sealed = append(sealed, roundTrip(tx, rx, w))
		} else {
			sealed = append(sealed, roundTrip(tx, rx, w))
			plain = append(plain, roundTrip(nil, nil, nil))
		}
		inner := mustMarshal(b, st)
		thrash()
		t0 := time.Now()
		pkt, _ := tx.key.Seal(nil, clusterkey.Envelope{Sender: tx.sender, Seq: tx.nextSeq()}, inner)
		seal = append(seal, int64(time.Since(t0)))
		thrash()
		t0 = time.Now()
		if _, _, err := rx.key.Open(pkt); err != nil {
			b.Fatal(err)
		}
		open = append(open, int64(time.Since(t0)))
	}
	median := func(v []int64) float64 {
		slices.Sort(v)
		return float64(v[len(v)/2])
	}
	b.ReportMetric(median(plain), "plain-ns/pkt")
	b.ReportMetric(median(sealed), "sealed-ns/pkt")
	b.ReportMetric(median(sealed)/median(plain), "sealed/plain")
	b.ReportMetric(median(seal), "seal-ns")
	b.ReportMetric(median(open), "open-ns")
}
