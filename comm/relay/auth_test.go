package relay

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

func keyedRelay(t *testing.T, node string, key *clusterkey.Key) *Relay {
	t.Helper()
	dir, err := os.MkdirTemp("", "rl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := New(Config{Node: node, SocketPath: filepath.Join(dir, "r.sock"), Listen: "127.0.0.1:0", Log: zaptest.NewLogger(t), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func relayKey(t *testing.T, fill byte) *clusterkey.Key {
	t.Helper()
	k, err := clusterkey.Parse(bytes.Repeat([]byte{fill}, clusterkey.Size))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Relays with the cluster key work as before; a relay without it, with
// another key, or a raw connection speaking the plain protocol is refused
// before any frame is applied: nothing is delivered, held or counted as
// received, and the refusals are counted.
func TestKeyedLinks(t *testing.T) {
	key := relayKey(t, 1)
	r0, r1 := keyedRelay(t, "n0", key), keyedRelay(t, "n1", key)
	link(r0, r1)
	nodes := []string{"n0", "n1"}
	r0.AddJob(1, nodes)
	r1.AddJob(1, nodes)
	a, b := dialRank(t, r0, 1, 0, 2), dialRank(t, r1, 1, 1, 2)
	a.msg(1, 0, "over TLS")
	if d := b.recv(0, 0); string(d.Data) != "over TLS" {
		t.Fatalf("%+v", d)
	}
	b.msg(0, 0, "and back")
	if d := a.recv(1, 0); string(d.Data) != "and back" {
		t.Fatalf("%+v", d)
	}

	// Intruders send job 1's rank 0 a message, as relay n9.
	plain, other := keyedRelay(t, "n9", nil), keyedRelay(t, "n9", relayKey(t, 2))
	for _, in := range []*Relay{plain, other} {
		in.SetPeers(map[string]string{"n0": r0.Addr(), "n9": in.Addr()})
		in.AddJob(1, []string{"n0", "n9"})
		x := dialRank(t, in, 1, 1, 2)
		x.msg(0, 0, "forged")
	}
	raw, err := net.Dial("tcp", r0.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	frame.Write(raw, framePeerHello, &peerHello{Node: "n1"})
	frame.Write(raw, framePeerMsg, &peerMsg{Job: 1, Src: 1, Dst: 0, Data: []byte("forged")})
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(raw); err != nil {
		t.Fatalf("the refused connection was not closed: %v", err)
	}
	// Refused at r0 (the plain relay's and the raw connection) and at
	// the intruders' ends (the other key's relay checks r0's certificate).
	eventually(t, "the intruders refused", func() bool { return r0.Stats().Refused >= 2 && other.Stats().Refused >= 1 })
	b.msg(0, 0, "still linked")
	if d := a.recv(1, 0); string(d.Data) != "still linked" {
		t.Fatalf("after the intruders: %+v", d)
	}
	if s := r0.Stats(); s.Received != 2 || s.Held != 0 || s.Dropped != 0 {
		t.Errorf("r0 applied an intruder's frame: %+v", s)
	}
}

// The rank socket accepts any local user, and a process only as a rank of
// a job run as its own user (or as root).
func TestRankMustRunAsTheJobsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs a process as another uid")
	}
	dir, err := os.MkdirTemp("", "rl-uid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	r, err := New(Config{Node: "n0", SocketPath: filepath.Join(dir, "r.sock"), Listen: "127.0.0.1:0", Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	const uid, intruder = 4_100_001, 4_100_002
	r.AddJobAs(1, []string{"n0", "n0", "n0"}, uid)
	exe := worldExecutable(t, dir)
	hello := func(as uint32, rank int) string {
		cmd := exec.Command(exe, "-test.run=^TestHelperRank$")
		cmd.Env = append(os.Environ(), "RELAY_HELPER_RANK="+r.SocketPath()+","+strconv.Itoa(rank), "GORACE=atexit_sleep_ms=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: as, Gid: as}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper as uid %d: %v\n%s", as, err, out)
		}
		_, answer, _ := strings.Cut(string(out), "ANSWER ")
		answer, _, _ = strings.Cut(answer, "\n")
		return answer
	}
	if got := hello(intruder, 0); !strings.Contains(got, "runs as uid 4100002, the job's ranks as uid 4100001") {
		t.Errorf("another user's process claiming rank 0: %q", got)
	}
	if got := hello(uid, 1); got != "welcome" {
		t.Errorf("the job's user's process: %q", got)
	}
	if _, fatal := tryRank(t, r, 1, 2, 3); fatal != "" {
		t.Errorf("root's process: %q", fatal)
	}
	if got := r.Stats().RanksRefused; got != 1 {
		t.Errorf("RanksRefused = %d, want 1", got)
	}
}

// TestHelperRank is the process TestRankMustRunAsTheJobsUser runs as
// another user: it says hello as a rank and prints the answer.
func TestHelperRank(t *testing.T) {
	arg := os.Getenv("RELAY_HELPER_RANK")
	if arg == "" {
		t.Skip("helper process only")
	}
	path, rank, _ := strings.Cut(arg, ",")
	rk, _ := strconv.Atoi(rank)
	cl, fatal := tryRank(t, &Relay{cfg: Config{SocketPath: path}}, 1, rk, 3)
	if fatal == "" {
		fatal = "welcome"
		cl.send(comm.FrameFinalize, &comm.Finalize{})
	}
	os.Stdout.WriteString("ANSWER " + fatal + "\n")
}

// worldExecutable copies the test binary into dir (searchable by all) so
// that another user may run it.
func worldExecutable(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "relay.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// A plain relay dialling a keyed one is refused at once, every time: its
// writer, which sees the close at once (watchClose), pauses more and more
// between redials instead of redialling in a tight loop (thousands a
// second, each logged and each asking the ranks to resend).
func TestRefusedRelayRedialsWithAPause(t *testing.T) {
	keyed, plain := keyedRelay(t, "n0", relayKey(t, 1)), keyedRelay(t, "n1", nil)
	plain.SetPeers(map[string]string{"n0": keyed.Addr(), "n1": plain.Addr()})
	plain.AddJob(1, []string{"n0", "n1"})
	dialRank(t, plain, 1, 1, 2).msg(0, 0, "refused")
	eventually(t, "the plain relay refused", func() bool { return keyed.Stats().Refused >= 1 })
	time.Sleep(500 * time.Millisecond)
	// Paused 10, 20, 40, … ms: a handful in the half second.
	if n := keyed.Stats().Refused; n > 20 {
		t.Fatalf("the plain relay dialled %d times in half a second", n)
	}
}
