package pmi

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// resumeConn connects to a server's resume socket as a keeper would and
// sends hello.
func resumeConn(t *testing.T, addr, hello string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(hello + "\n")); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	l, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(l, "\n")
}

// An agent's next life restores a job at its last barrier (the snapshot
// the previous life recorded, Hooks.Ended) and serves a rank's keeper
// that connects back: it answers the hello with its barrier count, the
// rank gets the keys of past barriers, and its finalize counts (the job
// does not fail as "without PMI_Finalize"). A peer that is not the rank's
// keeper, or names a job or rank not served, is refused with the reason.
func TestResumeServesARestoredJob(t *testing.T) {
	var ended []Snapshot
	s := NewServer(Hooks{Ended: func(_ int64, sn Snapshot) { ended = append(ended, sn) }}, nil)
	defer s.Close()
	addr := fmt.Sprintf("@cosched-test-pmi-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ServeResume(ln, func(job int64, rank int, c net.Conn) error {
		if rank == 1 {
			return errors.New("not its keeper")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.RestoreJob(1, []string{"a", "a"}, "a", &Snapshot{Epoch: 2, KV: map[string]string{"card0": "tcp://x"}})

	for hello, want := range map[string]string{
		"cmd=cosched_resume job=1 rank=1 barriers=2": "not its keeper",
		"cmd=cosched_resume job=9 rank=0 barriers=2": "job 9 is not served here",
		"cmd=cosched_resume job=1 rank=5 barriers=2": "rank 5 of job 1 does not run here",
		"cmd=init pmi_version=1":                     "want cosched_resume",
		"cmd=cosched_resume job=x rank=0 barriers=2": "invalid syntax",
	} {
		_, r := resumeConn(t, addr, hello)
		if got := readLine(t, r); !strings.HasPrefix(got, "cmd=cosched_resume rc=-1") || !strings.Contains(got, strings.ReplaceAll(want, " ", "_")) {
			t.Errorf("%s: %q, want a refusal saying %q", hello, got, want)
		}
	}

	c, r := resumeConn(t, addr, "cmd=cosched_resume job=1 rank=0 barriers=2 inited=1 finalized=0")
	if got := readLine(t, r); got != "cmd=cosched_resume rc=0 barriers=2" {
		t.Fatalf("hello answered %q", got)
	}
	for cmd, want := range map[string]string{
		"cmd=get kvsname=cosched_1 key=card0": "cmd=get_result rc=0 msg=success value=tcp://x",
		"cmd=finalize":                        "cmd=finalize_ack rc=0",
	} {
		if _, err := c.Write([]byte(cmd + "\n")); err != nil {
			t.Fatal(err)
		}
		if got := readLine(t, r); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	if f := s.Failure(1, 0, true); f != "" {
		t.Errorf("a resumed rank that finalized: failure %q", f)
	}
	if len(ended) != 0 {
		t.Errorf("snapshots recorded without a barrier: %v", ended)
	}
}

// The end of a barrier is recorded (Hooks.Ended) before any rank hears
// of it, with the job's whole key-value space and the new barrier count.
func TestBarrierEndRecordedBeforeRanksHear(t *testing.T) {
	var s *Server
	recorded := make(chan Snapshot, 1)
	s = NewServer(Hooks{
		Barrier: func(job int64, b Barrier) {
			go s.BarrierDone(job, Barrier{Epoch: b.Epoch, Puts: map[string]string{"k": "v", "other": "w"}})
		},
		Ended: func(_ int64, sn Snapshot) { recorded <- sn },
	}, nil)
	defer s.Close()
	s.AddJob(3, []string{"a"}, "a")
	f, err := s.Rank(3, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	c.Write([]byte("cmd=put kvsname=cosched_3 key=k value=v\ncmd=barrier_in\n"))
	readLine(t, r) // put_result
	got := readLine(t, r)
	select {
	case sn := <-recorded:
		if sn.Epoch != 1 || sn.KV["other"] != "w" || sn.KV["PMI_process_mapping"] == "" {
			t.Errorf("snapshot %+v: want barrier 1 with the presets and every node's puts", sn)
		}
	default:
		t.Fatalf("rank heard %q before the barrier's end was recorded", got)
	}
	if got != "cmd=barrier_out rc=0" {
		t.Errorf("rank heard %q", got)
	}
}

// A restarted controller meets a job past its first barriers: its fresh
// gather starts at the barrier the agents are in.
func TestGatherStartsAtTheFirstPartsBarrier(t *testing.T) {
	g := NewGather([]string{"a", "b"})
	if done, _, err := g.In("a", Barrier{Epoch: 3, Puts: map[string]string{"x": "1"}}); done != nil || err != nil {
		t.Fatalf("first part: %v %v", done, err)
	}
	done, to, err := g.In("b", Barrier{Epoch: 3})
	if err != nil || done == nil || done.Epoch != 3 || done.Puts["x"] != "1" || len(to) != 2 {
		t.Fatalf("barrier 3: %+v %v %v", done, to, err)
	}
	if _, _, err := g.In("a", Barrier{Epoch: 7}); err == nil {
		t.Error("a part of another barrier accepted once the gather has started")
	}
}
