package node

import (
	"context"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cosched/cosched/node/ctl"
)

// raftJournal is the controller's Journal over the controllers' raft group
// (node/journal): records are msgpack-encoded, one Append is one batch
// committed on a majority's disks before it returns.
type raftJournal struct {
	g *controlGroup
	// firstID, when above 1, numbers the first job of an empty journal.
	firstID int64
}

var _ Journal = raftJournal{}

// Load implements Journal: every record committed so far, compacted at the
// last snapshot. It waits until this controller has applied every entry
// committed before it started to lead.
func (r raftJournal) Load(ctx context.Context) ([]ctl.Record, error) {
	if err := r.g.j.Barrier(ctx); err != nil {
		return nil, err
	}
	raw := r.g.Records()
	if len(raw) == 0 && r.firstID > 1 {
		return []ctl.Record{{Kind: ctl.RecNextID, Job: r.firstID - 1}}, nil
	}
	return decodeRecords(raw)
}

// Append implements Journal.
func (r raftJournal) Append(ctx context.Context, records []ctl.Record) error {
	if len(records) == 0 {
		return nil
	}
	raw := make([][]byte, len(records))
	for i := range records {
		b, err := msgpack.Marshal(&records[i])
		if err != nil {
			return fmt.Errorf("encoding a %s record: %w", records[i].Kind, err)
		}
		raw[i] = b
	}
	return r.g.j.Append(ctx, raw)
}

func decodeRecords(raw [][]byte) ([]ctl.Record, error) {
	out := make([]ctl.Record, len(raw))
	for i, b := range raw {
		if err := msgpack.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("controller record %d: %w", i, err)
		}
	}
	return out, nil
}

// compactRecords returns the fewest records that rebuild what raw builds:
// the machine's own snapshot of the state they rebuild.
func compactRecords(cfg ctl.Config) func(raw [][]byte) ([][]byte, error) {
	return func(raw [][]byte) ([][]byte, error) {
		if len(raw) == 0 {
			return nil, nil
		}
		recs, err := decodeRecords(raw)
		if err != nil {
			return nil, err
		}
		m, err := ctl.Restore(cfg, recs, time.Now())
		if err != nil {
			return nil, err
		}
		snap := m.Snapshot()
		out := make([][]byte, len(snap))
		for i := range snap {
			if out[i], err = msgpack.Marshal(&snap[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}
