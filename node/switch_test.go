package node

import (
	"fmt"
	"github.com/cosched/cosched/api"
	"slices"
	"sync"
	"testing"

	"github.com/cosched/cosched/sharing"
	"go.uber.org/zap/zaptest"
)

// fakeSignals records what a switcher runs.
type fakeSignals struct {
	mu      sync.Mutex
	running map[string]bool // "job" or "job/rank"
	log     []string
}

func (f *fakeSignals) set(key string, run bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running == nil {
		f.running = map[string]bool{}
	}
	f.running[key] = run
	verb := "stop"
	if run {
		verb = "cont"
	}
	f.log = append(f.log, verb+" "+key)
	return nil
}

func (f *fakeSignals) Stop(job int64) error { return f.set(fmt.Sprint(job), false) }
func (f *fakeSignals) Cont(job int64) error { return f.set(fmt.Sprint(job), true) }
func (f *fakeSignals) StopRank(job int64, r int) error {
	return f.set(fmt.Sprintf("%d/%d", job, r), false)
}
func (f *fakeSignals) ContRank(job int64, r int) error {
	return f.set(fmt.Sprintf("%d/%d", job, r), true)
}

// runningNow lists what runs, sorted.
func (f *fakeSignals) runningNow() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k, run := range f.running {
		if run {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// BCS: one node, one slot, MPL 3, three jobs in rows 0, 1, 2. The row's
// rank runs; when it blocks, the next ready rank in row order runs until
// it unblocks; a blocked rank with nobody ready keeps the slot.
func TestSwitcherSlotReuse(t *testing.T) {
	var sig fakeSignals
	s := newSwitcher(&sig, false, zaptest.NewLogger(t))
	s.configure(sharing.BCS, 3)
	for job, row := range map[int64]int{10: 0, 11: 1, 12: 2} {
		s.add(job, map[int]int{0: 0})
		s.setRow(job, row, true)
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := sig.runningNow(); !slices.Equal(got, want) {
			t.Fatalf("%s: running %v, want %v", step, got, want)
		}
	}
	check("before the first strobe") // nothing runs
	s.Switch(0)
	check("slice of row 0", "10/0")
	s.blocked(10, 0, true)
	check("row 0's rank blocked (still continued, asleep): row 1's runs", "10/0", "11/0")
	s.blocked(11, 0, true)
	check("row 1's blocked too: row 2's runs", "10/0", "12/0")
	s.blocked(10, 0, false)
	check("row 0's rank can proceed: it gets the slot back", "10/0")
	if n := s.slotReuses(); n != 2 {
		t.Fatalf("%d slot reuses, want 2", n)
	}
	s.Switch(1)
	check("slice of row 1: its rank is blocked, row 2's (next after 1) runs", "11/0", "12/0")
	s.blocked(12, 0, true)
	check("everyone but row 0 blocked: row 0's runs", "10/0", "11/0")
	s.blocked(10, 0, true)
	check("everyone blocked: the row's own rank keeps the slot", "11/0")
	s.rankExited(11, 0)
	sig.mu.Lock()
	delete(sig.running, "11/0") // it exited: no signal, it is just gone
	sig.log = append(sig.log, "stop 11/0 (exit)")
	sig.mu.Unlock()
	s.blocked(10, 0, false)
	check("row 1's rank ended: row 2 blocked, row 0 ready", "10/0")
	// In row 1's slice: row 1's rank exited, row 0's runs on the slot
	// row 1 lent it; row 2's is blocked but not running.
	states := func(job int64) string {
		l, _ := s.rankStates(job)
		return fmt.Sprint(l)
	}
	if got := states(10) + states(11) + states(12); got != "[{0 running true}][{0 exited false}][{0 stopped false}]" {
		t.Fatalf("rank states %s", got)
	}
	if l, row := s.rankStates(99); l != nil || row != 1 {
		t.Fatalf("a job with no ranks here: %v in row %d", l, row)
	}
	// Each lend is counted on the cell that lent: slot 0 in the row whose
	// slice it was.
	want := []api.SlotLends{{Slot: 0, Row: 0, Count: 2}, {Slot: 0, Row: 1, Count: 3}}
	if got := s.slotLends(); !slices.Equal(got, want) || s.slotReuses() != 5 {
		t.Fatalf("lends %+v (reuses %d), want %+v (5)", got, s.slotReuses(), want)
	}
}

// Gang mode keeps job-level control: no reuse, whole jobs switch.
func TestSwitcherGangJobs(t *testing.T) {
	var sig fakeSignals
	s := newSwitcher(&sig, false, zaptest.NewLogger(t))
	s.configure(sharing.Gang, 2)
	s.add(1, map[int]int{0: 0, 1: 1})
	s.setRow(1, 0, true)
	s.add(2, map[int]int{0: 0, 1: 1})
	s.setRow(2, 1, true)
	s.Switch(0)
	if got := sig.runningNow(); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("running %v", got)
	}
	s.blocked(1, 0, true) // ignored outside BCS
	s.Switch(1)
	if got := sig.runningNow(); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("running %v", got)
	}
	if s.slotReuses() != 0 {
		t.Fatal("gang mode reused a slot")
	}
}
