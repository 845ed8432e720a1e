package journal

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// FSM is the owner's state, fed by the journal.
//
// Threading: Apply, Snapshot and Restore are called from one goroutine (the
// journal's apply goroutine), never concurrently with each other, in log
// order. They must not call the journal's Append or Barrier (that would wait
// for the goroutine that is calling them). They may take the owner's own
// locks. They should be quick: entries are applied one batch at a time.
type FSM interface {
	// Apply delivers one committed batch (one Append's entries, in order)
	// at raft log index index. The entries alias the journal's copy: the
	// owner must not modify them (it may keep them). An error is returned to the Append that
	// wrote the batch (on the server that wrote it) and recorded (see
	// Stats.ApplyErr); the state is whatever the owner left.
	Apply(index uint64, entries [][]byte) error
	// Snapshot returns the owner's whole state as bytes. It sees every
	// batch applied so far and nothing after; the bytes are written to disk
	// without further calls, so the owner may keep changing afterwards.
	Snapshot() ([]byte, error)
	// Restore replaces the owner's whole state with a Snapshot's bytes
	// (taken here or, on a follower, sent by the leader). Batches applied
	// after it continue from the snapshot's index.
	Restore(snapshot []byte) error
}

// fsm adapts an FSM to raft's.
type fsm struct {
	owner    FSM
	maxBytes int64

	mu     sync.Mutex
	failed error // the first Apply or Restore error, for Stats and Open
}

var _ raft.FSM = (*fsm)(nil)

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	entries, err := decodeBatch(l.Data)
	if err == nil {
		err = f.owner.Apply(l.Index, entries)
	} else {
		err = fmt.Errorf("entry %d: %w", l.Index, err)
	}
	if err != nil {
		f.record(fmt.Errorf("journal: applying entry %d: %w", l.Index, err))
		return err
	}
	return nil
}

func (f *fsm) record(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = err
	}
}

func (f *fsm) firstError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	b, err := f.owner.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("journal: snapshot: %w", err)
	}
	return snapshotBytes(b), nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	err := f.restore(rc)
	if err != nil {
		f.record(err)
	}
	return err
}

func (f *fsm) restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, f.maxBytes+1))
	if err != nil {
		return fmt.Errorf("journal: reading snapshot: %w", err)
	}
	if int64(len(data)) > f.maxBytes {
		return fmt.Errorf("journal: snapshot larger than MaxSnapshotBytes (%d)", f.maxBytes)
	}
	if err := f.owner.Restore(data); err != nil {
		return fmt.Errorf("journal: restoring snapshot: %w", err)
	}
	return nil
}

// snapshotBytes is an owner's snapshot on its way to disk.
type snapshotBytes []byte

func (s snapshotBytes) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("journal: writing snapshot: %w", err)
	}
	return sink.Close()
}

func (s snapshotBytes) Release() {}
