package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node/ctl"
	"github.com/cosched/cosched/sharing"
)

// startController runs a space-mode controller with journal j and one
// agent's worth of processors known to its machine (no connection: orders
// to it go nowhere).
func startController(t *testing.T, j Journal, compactAfter int) (*Controller, context.CancelFunc, <-chan error) {
	t.Helper()
	c, err := NewController(ControllerConfig{Name: "c", Mode: sharing.Space, MPL: 1, Policy: gang.FCFS, Journal: j, CompactAfter: compactAfter, History: 5}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if err := c.do(ctx, func(m *ctl.Machine) {
		if err := m.AgentUp(ctl.AgentReport{Name: "a", CPUs: 4}); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return c, cancel, done
}

// The controller compacts a journal that can be compacted: it then holds
// a snapshot, from which the same job table is rebuilt.
func TestControllerCompactsItsJournal(t *testing.T) {
	j := &MemJournal{}
	c, cancel, done := startController(t, j, 50)
	defer func() { cancel(); <-done }()
	ctx := context.Background()
	for i := range 60 {
		id, err := c.Submit(ctx, api.JobSpec{Command: []string{"x"}, Processors: 4, TimeLimit: api.Duration{D: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := c.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []ctl.Job
	if err := c.do(ctx, func(m *ctl.Machine) { want = m.Jobs(true) }); err != nil {
		t.Fatal(err)
	}
	records, _ := j.Load(ctx)
	t.Logf("%d records after compaction", len(records))
	// 60 submissions, 30 cancels, a start and the agent's and the clock's
	// records: 94 without compaction. A compaction after 50 leaves a
	// snapshot (the queue, the running job, the last 5 finished) and what
	// followed it.
	if len(records) >= 94 {
		t.Fatalf("journal holds %d records: not compacted", len(records))
	}
	r, err := ctl.Restore(machineConfig(c.cfg), records, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Jobs(true); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored from the compacted journal:\n%v\nwant\n%v", got, want)
	}
}

// failingJournal refuses appends after the first n records.
type failingJournal struct {
	MemJournal
	n int
}

func (f *failingJournal) Append(ctx context.Context, rs []ctl.Record) error {
	if f.Len()+len(rs) > f.n {
		return errors.New("disk full")
	}
	return f.MemJournal.Append(ctx, rs)
}

// A submission whose record cannot be persisted is not accepted, and the
// controller stops: it never runs what it could not make durable.
func TestControllerStopsWhenTheJournalFails(t *testing.T) {
	j := &failingJournal{n: 2} // the clock's origin and the agent
	c, cancel, done := startController(t, j, 0)
	defer cancel()
	ctx := context.Background()
	if _, err := c.Submit(ctx, api.JobSpec{Command: []string{"x"}, Processors: 4, TimeLimit: api.Duration{D: time.Hour}}); !errors.Is(err, ErrStopped) {
		t.Fatalf("submission the journal refused: %v, want ErrStopped", err)
	}
	if err := <-done; err == nil || !containsAll(err.Error(), "journal", "disk full") {
		t.Fatalf("Run: %v, want the journal's error", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
