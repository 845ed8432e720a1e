package strobe

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
)

func TestSenderStrobes(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	ctl := n.Transport("ctl")
	defer ctl.Close()
	var ts []Transport
	var addrs []string
	for _, a := range []string{"a", "b", "c"} {
		tr := n.Transport(a)
		defer tr.Close()
		ts, addrs = append(ts, tr), append(addrs, a)
	}
	s := NewSender(ctl, 9, nil)
	sent, err := s.Strobe(addrs, 4, 2, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		m, err := Unmarshal(recv(t, tr).Data)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := *m.(*Strobe), (Strobe{Epoch: 9, Seq: 4, Row: 2, MemberEpoch: 3, SentMono: sent}); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
	if _, err := s.Strobe(addrs, 0, 0, 0, 0); err == nil {
		t.Fatal("slice 0 accepted")
	}
	if _, err := s.Strobe(nil, 1, 0, 0, 0); err != nil {
		t.Fatalf("no targets: %v", err)
	}
}

func TestSenderReportsEveryFailedSend(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	ctl, a := n.Transport("ctl"), n.Transport("a")
	defer a.Close()
	ctl.Close()
	_, err := NewSender(ctl, 1, nil).Strobe([]string{"a", "b"}, 1, 0, 0, 0)
	if !errors.Is(err, net.ErrClosed) || !strings.Contains(err.Error(), "2 of 2 sends failed") {
		t.Fatalf("err = %v", err)
	}
}

// sendLog is a Transport that records where it sends.
type sendLog struct{ to []string }

func (l *sendLog) Send(to string, _ []byte) error { l.to = append(l.to, to); return nil }
func (l *sendLog) Packets() <-chan Packet         { return nil }
func (l *sendLog) LocalAddr() string              { return "log" }
func (l *sendLog) Close() error                   { return nil }

func TestSenderRotatesFirstTarget(t *testing.T) {
	l := &sendLog{}
	s := NewSender(l, 1, nil)
	for seq := uint64(1); seq <= 3; seq++ {
		if _, err := s.Strobe([]string{"a", "b", "c"}, seq, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(l.to, ""); got != "bcacababc" {
		t.Fatalf("send order %q: every agent should take its turn first", got)
	}
}
