package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// listFSM is the simplest owner: the list of every entry applied, in order.
type listFSM struct {
	mu        sync.Mutex
	entries   []string
	lastIndex uint64
	restores  int
	// failOn makes Apply fail for an entry with this text.
	failOn string
}

func (f *listFSM) Apply(index uint64, entries [][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index <= f.lastIndex {
		return fmt.Errorf("index %d after %d", index, f.lastIndex)
	}
	f.lastIndex = index
	for _, e := range entries {
		if f.failOn != "" && string(e) == f.failOn {
			return fmt.Errorf("refusing %q", e)
		}
		f.entries = append(f.entries, string(e))
	}
	return nil
}

func (f *listFSM) Snapshot() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return json.Marshal(f.entries)
}

func (f *listFSM) Restore(b []byte) error {
	var entries []string
	if err := json.Unmarshal(b, &entries); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = entries
	f.restores++
	return nil
}

func (f *listFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.entries)
}

// testTiming is faster than the LAN default so a lone journal's Open (one
// election) is quick in tests. Groups use DefaultLANTiming: under -race on
// a loaded machine a 75 ms lease makes leaders step down for nothing.
func testTiming() Timing {
	return Timing{
		HeartbeatTimeout:   150 * time.Millisecond,
		ElectionTimeout:    150 * time.Millisecond,
		LeaderLeaseTimeout: 75 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
	}
}

func loneConfig(dir string, f FSM) Config {
	return Config{Dir: dir, NodeID: "c0", Bind: "127.0.0.1:0", Bootstrap: true, FSM: f, Timing: testTiming()}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func appendN(t testing.TB, j *Journal, prefix string, from, to int) []string {
	t.Helper()
	var want []string
	for i := from; i < to; i++ {
		e := fmt.Sprintf("%s-%04d", prefix, i)
		if err := j.Append(ctxFor(t, 10*time.Second), [][]byte{[]byte(e)}); err != nil {
			t.Fatalf("append %s: %v", e, err)
		}
		want = append(want, e)
	}
	return want
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
