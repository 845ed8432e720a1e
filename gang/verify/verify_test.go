package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
)

func TestCheckerRejectsBadDecisions(t *testing.T) {
	m := gang.Machine{Processors: 4, MemoryPerProcessor: 100}
	job := gang.Job{ID: 1, Processors: 2, Submit: 5, Memory: 60}
	for _, c := range []struct {
		name string
		d    gang.Decision
		at   int64
		want string
	}{
		{"before submit", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{0, 1}}, 4, "before its submission"},
		{"wrong width", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{0}}, 5, "1 columns for 2 processors"},
		{"outside machine", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{3, 4}}, 5, "column 4 outside the machine"},
		{"bad row", gang.Decision{Kind: gang.Start, Job: 1, Row: 2, Columns: []int{0, 1}}, 5, "row 2 outside the matrix"},
		{"duplicate column", gang.Decision{Kind: gang.Start, Job: 1, Columns: []int{1, 1}}, 5, "column 1 twice"},
		{"unknown job", gang.Decision{Kind: gang.Start, Job: 9, Columns: []int{0, 1}}, 5, "job 9 is unknown"},
		{"alternate of a queued job", gang.Decision{Kind: gang.Alternate, Job: 1, Row: 1, Columns: []int{0, 1}}, 5, "not running"},
	} {
		ck := New(m, 2)
		if err := ck.Submitted(job); err != nil {
			t.Fatal(err)
		}
		err := ck.Apply(&c.d, timeOf(c.at))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCheckerTracksSlotsMemoryAndAlternates(t *testing.T) {
	ck := New(gang.Machine{Processors: 4, MemoryPerProcessor: 100}, 2)
	for _, j := range []gang.Job{
		{ID: 1, Processors: 2, Memory: 60},
		{ID: 2, Processors: 2, Memory: 50},
		{ID: 3, Processors: 2, Memory: 10},
		{ID: 4, Processors: 2},
	} {
		if err := ck.Submitted(j); err != nil {
			t.Fatal(err)
		}
	}
	must := func(d gang.Decision) {
		t.Helper()
		if err := ck.Apply(&d, 0); err != nil {
			t.Fatal(err)
		}
	}
	mustFail := func(d gang.Decision, want string) {
		t.Helper()
		if err := ck.Apply(&d, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v: err = %v, want %q", d, err, want)
		}
	}
	must(gang.Decision{Kind: gang.Start, Job: 1, Row: 0, Columns: []int{0, 1}})
	mustFail(gang.Decision{Kind: gang.Start, Job: 2, Row: 0, Columns: []int{1, 2}}, "already holds job 1")
	mustFail(gang.Decision{Kind: gang.Start, Job: 2, Row: 1, Columns: []int{0, 1}}, "would hold 110 bytes")
	must(gang.Decision{Kind: gang.Alternate, Job: 1, Row: 1, Columns: []int{0, 1}})
	mustFail(gang.Decision{Kind: gang.Start, Job: 3, Row: 1, Columns: []int{0, 1}}, "still job 1's alternate")
	mustFail(gang.Decision{Kind: gang.Alternate, Job: 1, Row: 0, Columns: []int{0, 1}}, "in its own row")
	must(gang.Decision{Kind: gang.AlternateEnd, Job: 1, Row: 1})
	must(gang.Decision{Kind: gang.Start, Job: 3, Row: 1, Columns: []int{0, 1}}) // 60 + 10 fits
	mustFail(gang.Decision{Kind: gang.AlternateEnd, Job: 1, Row: 1}, "no alternate in row 1")
	if err := ck.Finished(1); err != nil {
		t.Fatal(err)
	}
	must(gang.Decision{Kind: gang.Start, Job: 4, Row: 0, Columns: []int{0, 1}}) // released
	if got := ck.Running(); got[0] != 2 || got[1] != 2 {
		t.Errorf("running %v", got)
	}
	if err := ck.Finished(7); err == nil {
		t.Error("finishing an unknown job accepted")
	}
}

func timeOf(s int64) time.Duration { return time.Duration(s) }
