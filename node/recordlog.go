package node

import (
	"fmt"
	"slices"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/node/journal"
)

// recordLog is the journal's FSM on a controller-eligible agent: the
// controller's records (opaque, msgpack-encoded) since the last compaction,
// in the order the journal committed them. Every controller-eligible agent
// keeps one, leading or not; the agent that comes to lead rebuilds its
// controller from it, so a standby needs no controller of its own to stay
// current.
//
// Compaction (at each journal snapshot) replaces the records with the
// fewest that rebuild the same state, as the controller's state machine
// computes them, so the log stays bounded by the job table's size.
type recordLog struct {
	// compact returns the fewest records that rebuild the state records
	// build. It is called on the journal's apply goroutine.
	compact func(records [][]byte) ([][]byte, error)

	mu      sync.Mutex
	records [][]byte
	index   uint64 // the journal index of the last batch applied
}

var _ journal.FSM = (*recordLog)(nil)

// Apply implements journal.FSM.
func (l *recordLog) Apply(index uint64, entries [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, entries...)
	l.index = index
	return nil
}

// Snapshot implements journal.FSM: it compacts, then encodes.
func (l *recordLog) Snapshot() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.compact != nil {
		c, err := l.compact(l.records)
		if err != nil {
			return nil, fmt.Errorf("compacting %d records: %w", len(l.records), err)
		}
		l.records = c
	}
	return msgpack.Marshal(l.records)
}

// Restore implements journal.FSM.
func (l *recordLog) Restore(b []byte) error {
	var records [][]byte
	if err := msgpack.Unmarshal(b, &records); err != nil {
		return fmt.Errorf("controller records: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = records
	return nil
}

// Records returns the records to rebuild the controller from, and the
// journal index they reach.
func (l *recordLog) Records() ([][]byte, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records), l.index
}
