package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoneJournalRestartRestoresEverything(t *testing.T) {
	dir := t.TempDir()
	f1 := &listFSM{}
	j, err := Open(ctxFor(t, 10*time.Second), loneConfig(dir, f1))
	if err != nil {
		t.Fatal(err)
	}
	if !j.IsLeader() {
		t.Fatal("a lone journal does not lead after Open")
	}
	want := appendN(t, j, "before", 0, 30)
	// A batch is applied whole, in order.
	batch := [][]byte{[]byte("batch-a"), []byte("batch-b"), []byte("batch-c")}
	if err := j.Append(ctxFor(t, 10*time.Second), batch); err != nil {
		t.Fatal(err)
	}
	want = append(want, "batch-a", "batch-b", "batch-c")
	if err := j.Snapshot(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	want = append(want, appendN(t, j, "after", 0, 20)...)
	if got := f1.list(); !slices.Equal(got, want) {
		t.Fatalf("applied before restart:\n got %v\nwant %v", got, want)
	}
	st := j.Stats()
	if st.State != "Leader" || st.Leader.ID != "c0" || st.LogBytes == 0 || st.SnapshotBytes == 0 || st.AppliedIndex < 50 {
		t.Fatalf("stats %+v", st)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := j.Append(context.Background(), [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}

	// Restart: the snapshot and the entries after it come back, nothing else.
	f2 := &listFSM{}
	j2, err := Open(ctxFor(t, 10*time.Second), loneConfig(dir, f2))
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if got := f2.list(); !slices.Equal(got, want) {
		t.Fatalf("restored after restart:\n got %v\nwant %v", got, want)
	}
	if f2.restores != 1 {
		t.Fatalf("%d snapshot restores, want 1", f2.restores)
	}
	// And it goes on appending after what it restored.
	want = append(want, appendN(t, j2, "again", 0, 3)...)
	if got := f2.list(); !slices.Equal(got, want) {
		t.Fatalf("after more appends:\n got %v\nwant %v", got, want)
	}
}

func TestConcurrentAppendsAllCommitInOneOrder(t *testing.T) {
	f := &listFSM{}
	j, err := Open(ctxFor(t, 10*time.Second), loneConfig(t.TempDir(), f))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if err := j.Append(ctxFor(t, 10*time.Second), [][]byte{fmt.Appendf(nil, "w%d-%02d", w, i)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := f.list()
	if len(got) != 200 {
		t.Fatalf("%d entries applied, want 200", len(got))
	}
	// Each submitter's entries keep their order.
	next := map[string]int{}
	for _, e := range got {
		var w, i int
		if _, err := fmt.Sscanf(e, "w%d-%d", &w, &i); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint(w)
		if i != next[key] {
			t.Fatalf("submitter %d: entry %d applied before %d", w, i, next[key])
		}
		next[key]++
	}
}

func TestApplyErrorReachesAppendAndOpen(t *testing.T) {
	dir := t.TempDir()
	f := &listFSM{failOn: "poison"}
	j, err := Open(ctxFor(t, 10*time.Second), loneConfig(dir, f))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, j, "fine", 0, 2)
	err = j.Append(ctxFor(t, 10*time.Second), [][]byte{[]byte("poison")})
	if err == nil || !strings.Contains(err.Error(), `refusing "poison"`) {
		t.Fatalf("Append of an entry the FSM refuses: %v", err)
	}
	if st := j.Stats(); st.ApplyErr == nil {
		t.Fatal("Stats.ApplyErr is nil after a failed Apply")
	}
	j.Close()
	// A restart replays the same entry into an FSM that refuses it: Open
	// fails instead of starting from a state that misses it.
	_, err = Open(ctxFor(t, 10*time.Second), loneConfig(dir, &listFSM{failOn: "poison"}))
	if err == nil || !strings.Contains(err.Error(), "applying entry") {
		t.Fatalf("Open over an entry the FSM refuses: %v", err)
	}
}

func TestConfigListsEveryProblem(t *testing.T) {
	_, err := Open(context.Background(), Config{Peers: []Peer{{ID: "a"}, {ID: "a", Addr: "x:1"}}})
	if err == nil {
		t.Fatal("an empty config was accepted")
	}
	for _, want := range []string{"empty Dir", "empty NodeID", "neither Bind nor Listener", "nil FSM", "peer 0: ID and Addr", `peer 1: ID "a" appears twice`, "is not among Peers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	cfg := loneConfig(t.TempDir(), &listFSM{})
	cfg.Bind = "0.0.0.0:0"
	if _, err := Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "set Advertise") {
		t.Fatalf("a wildcard bind without Advertise: %v", err)
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	f := &listFSM{}
	j, err := Open(ctxFor(t, 10*time.Second), loneConfig(t.TempDir(), f))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, j, "e", 0, 5)
	// An Append whose ctx ends early leaves a waiter that Close reaps.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = j.Append(ctx, [][]byte{[]byte("late")})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "goroutines left after Close", func() bool { return runtime.NumGoroutine() <= base })
}

// TestOpenRefusesDamagedJournal damages a journal in each way a disk or an
// operator can, and checks that Open names the file and the damage.
func TestOpenRefusesDamagedJournal(t *testing.T) {
	good := t.TempDir()
	cfg := loneConfig(good, &listFSM{})
	cfg.TrailingLogs = 2 // compact the log at the snapshot, so it starts late
	j, err := Open(ctxFor(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, j, "snapshotted-entry", 0, 40)
	if err := j.Snapshot(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	appendN(t, j, "tail-entry", 0, 5)
	j.Close()

	db := func(dir string) string { return filepath.Join(dir, logFile) }
	snapFile := func(t *testing.T, dir, name string) string {
		m, _ := filepath.Glob(filepath.Join(dir, snapshotDir, "*", name))
		if len(m) != 1 {
			t.Fatalf("%d snapshot %s files", len(m), name)
		}
		return m[0]
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the file to name
		want   string
	}{
		{"garbage log file", func(t *testing.T, dir string) string {
			garbage := make([]byte, 64<<10)
			for i := range garbage {
				garbage[i] = byte(i*7 + 3)
			}
			must(t, os.WriteFile(db(dir), garbage, 0o600))
			return db(dir)
		}, "not a readable journal database"},
		{"truncated log file", func(t *testing.T, dir string) string {
			info, err := os.Stat(db(dir))
			must(t, err)
			_ = info
			must(t, os.Truncate(db(dir), 2*4096)) // the two meta pages, no data
			return db(dir)
		}, "truncated"},
		{"empty log file", func(t *testing.T, dir string) string {
			must(t, os.Truncate(db(dir), 0))
			return db(dir)
		}, "empty file"},
		{"flipped byte in an entry", func(t *testing.T, dir string) string {
			raw, err := os.ReadFile(db(dir))
			must(t, err)
			marker := []byte("tail-entry-0003")
			n := 0
			for i := 0; ; {
				k := bytesIndex(raw[i:], marker)
				if k < 0 {
					break
				}
				raw[i+k+len(marker)-1] ^= 0x01
				i += k + len(marker)
				n++
			}
			if n == 0 {
				t.Fatal("marker not found in the log file")
			}
			must(t, os.WriteFile(db(dir), raw, 0o600))
			return db(dir)
		}, "checksum mismatch"},
		{"damaged snapshot data", func(t *testing.T, dir string) string {
			p := snapFile(t, dir, snapshotStateFile)
			raw, err := os.ReadFile(p)
			must(t, err)
			raw[len(raw)/2] ^= 0x20
			must(t, os.WriteFile(p, raw, 0o600))
			return p
		}, "checksum mismatch"},
		{"truncated snapshot data", func(t *testing.T, dir string) string {
			p := snapFile(t, dir, snapshotStateFile)
			must(t, os.Truncate(p, 10))
			return p
		}, "truncated snapshot"},
		{"garbage snapshot description", func(t *testing.T, dir string) string {
			p := snapFile(t, dir, snapshotMetaFile)
			must(t, os.WriteFile(p, []byte("{\"Index\": 4"), 0o600))
			return p
		}, "not a snapshot description"},
		{"missing snapshot data", func(t *testing.T, dir string) string {
			p := snapFile(t, dir, snapshotStateFile)
			must(t, os.Remove(p))
			return p
		}, "no such file"},
		{"snapshot removed under a compacted log", func(t *testing.T, dir string) string {
			p := snapFile(t, dir, snapshotMetaFile)
			must(t, os.RemoveAll(filepath.Dir(p)))
			return db(dir)
		}, "there is no snapshot: entries 1 to"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.CopyFS(dir, os.DirFS(good)))
			file := c.damage(t, dir)
			f := &listFSM{}
			j, err := Open(ctxFor(t, 10*time.Second), loneConfig(dir, f))
			if err == nil {
				j.Close()
				t.Fatalf("Open accepted the damaged journal (it restored %d entries)", len(f.list()))
			}
			if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nshould name %s and say %q", err, file, c.want)
			}
			t.Log(err)
		})
	}
	t.Run("locked by another open", func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.CopyFS(dir, os.DirFS(good)))
		j, err := Open(ctxFor(t, 10*time.Second), loneConfig(dir, &listFSM{}))
		must(t, err)
		defer j.Close()
		_, err = Open(ctxFor(t, 10*time.Second), loneConfig(dir, &listFSM{}))
		if err == nil || !strings.Contains(err.Error(), db(dir)) || !strings.Contains(err.Error(), "locked by another process") {
			t.Fatalf("second Open of one directory: %v", err)
		}
	})
	t.Run("undamaged copy opens", func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.CopyFS(dir, os.DirFS(good)))
		f := &listFSM{}
		j, err := Open(ctxFor(t, 10*time.Second), loneConfig(dir, f))
		must(t, err)
		defer j.Close()
		if n := len(f.list()); n != 45 {
			t.Fatalf("restored %d entries, want 45", n)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func bytesIndex(b, sub []byte) int { return strings.Index(string(b), string(sub)) }

// heldFSM is listFSM whose Apply of the entry "hold" waits for release.
type heldFSM struct {
	listFSM
	held    chan struct{} // closed when Apply reaches "hold"
	release chan struct{}
}

func (f *heldFSM) Apply(index uint64, entries [][]byte) error {
	for _, e := range entries {
		if string(e) == "hold" {
			close(f.held)
			<-f.release
		}
	}
	return f.listFSM.Apply(index, entries)
}

// TestCloseWithAnEntryQueuedForTheFSM: raft answers a future at the latest
// when it shuts down, except an entry it has committed and queued for the
// FSM (hashicorp/raft#498): a waiter for one waited for ever, and Close
// with it (an agent stopping just as its controller appended an entry
// hung). The FSM is held on one entry while another waits behind it, and
// Close comes then; it must return, and leave no goroutine.
func TestCloseWithAnEntryQueuedForTheFSM(t *testing.T) {
	for round := range 8 {
		base := runtime.NumGoroutine()
		f := &heldFSM{held: make(chan struct{}), release: make(chan struct{})}
		j, err := Open(ctxFor(t, 10*time.Second), loneConfig(t.TempDir(), f))
		if err != nil {
			t.Fatal(err)
		}
		go j.Append(context.Background(), [][]byte{[]byte("hold")})
		<-f.held
		// committed, behind "hold" in the FSM's queue; its caller gives up
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if err := j.Append(ctx, [][]byte{[]byte("queued")}); err == nil {
			t.Fatalf("round %d: an Append behind a held FSM returned", round)
		}
		cancel()
		closed := make(chan error, 1)
		go func() { closed <- j.Close() }()
		time.Sleep(50 * time.Millisecond)
		close(f.release)
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", round, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close did not return within 10 s", round)
		}
		eventually(t, 3*time.Second, "goroutines left after Close", func() bool { return runtime.NumGoroutine() <= base })
	}
}
