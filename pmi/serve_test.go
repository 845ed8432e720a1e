package pmi

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// A rank that misbehaves on its socket gets an error reply or ends its
// job with a reason; the server neither hangs nor crashes.
func TestServerBadInput(t *testing.T) {
	for _, c := range []struct {
		name, send string
		reply      string // expected reply prefix, or "" for a failure
		failure    string
	}{
		{"missing key", "cmd=get kvsname=cosched_1 key=nope\n", "cmd=get_result rc=-1", ""},
		{"key too long", "cmd=put kvsname=cosched_1 key=" + strings.Repeat("k", 100) + " value=v\n", "cmd=put_result rc=-1 msg=key_too_long", ""},
		{"malformed", "hello there\n", "", "malformed PMI command"},
		{"line too long", strings.Repeat("x", 3*MaxLine) + "\n", "", "longer than"},
		{"unknown command", "cmd=spawn nprocs=9\n", "", "does not serve"},
		{"barrier twice", "cmd=barrier_in\ncmd=barrier_in\n", "", "entered PMI barrier 0 twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			failed := make(chan string, 1)
			s := NewServer(Hooks{Fail: func(_ int64, reason string) { failed <- reason }}, nil)
			defer s.Close()
			s.AddJob(1, []string{"a", "a"}, "a")
			f, err := s.Rank(1, 0, "")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.FileConn(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			go conn.Write([]byte(c.send))
			if c.reply != "" {
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil || !strings.HasPrefix(line, c.reply) {
					t.Fatalf("reply %q (%v), want %q…", line, err, c.reply)
				}
				return
			}
			select {
			case reason := <-failed:
				if !strings.Contains(reason, c.failure) {
					t.Errorf("failure %q, want %q", reason, c.failure)
				}
				if got := s.Failure(1, 1, false); got != reason {
					t.Errorf("the job's other rank reports %q, want the job's failure", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no failure")
			}
		})
	}
}
