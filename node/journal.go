package node

import (
	"context"
	"slices"
	"sync"

	"github.com/cosched/cosched/node/ctl"
)

// Journal keeps the controller's records (node/ctl) so that a controller
// started again rebuilds its job table from them. The controller calls it
// from its loop only, never concurrently.
type Journal interface {
	// Load returns every record appended so far, in order; the controller
	// calls it once, at start. An unreadable journal is an error: the
	// controller must not start with an empty queue instead.
	Load(ctx context.Context) ([]ctl.Record, error)
	// Append makes records durable, in order, and returns once they are:
	// the controller answers a submission and sends orders to agents only
	// after. An error stops the controller.
	Append(ctx context.Context, records []ctl.Record) error
}

// Compactor is a Journal that can replace everything it holds with the
// fewer records of a snapshot of the same state (ctl.Machine.Snapshot).
// The controller compacts one that has grown by
// ControllerConfig.CompactAfter records since the last time.
type Compactor interface {
	Journal
	Compact(ctx context.Context, snapshot []ctl.Record) error
}

// MemJournal is a Journal in memory: it survives a controller's restart
// within one process (tests), not the process.
type MemJournal struct {
	mu      sync.Mutex
	records []ctl.Record
}

// Load implements Journal.
func (j *MemJournal) Load(context.Context) ([]ctl.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.records), nil
}

// Append implements Journal.
func (j *MemJournal) Append(_ context.Context, records []ctl.Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.records = append(j.records, records...)
	return nil
}

// Len is the number of records held.
func (j *MemJournal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.records)
}

// Compact implements Compactor.
func (j *MemJournal) Compact(_ context.Context, snapshot []ctl.Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.records = slices.Clone(snapshot)
	return nil
}
