package nowsim

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestGeneratorShares(t *testing.T) {
	c := GenConfig{Nodes: 8, Jobs: 10, SeqShare: 0.3, LargeShare: 0.2, BalancedShare: 0.5, Seed: 1,
		PTime: [3]Range{{time.Minute, 2 * time.Minute}, {time.Hour, 2 * time.Hour}, {3 * time.Hour, 4 * time.Hour}}}
	jobs, err := Generate(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// 10 × 0.3 = 3 sequential, 10 × 0.2 = 2 large (4…8 tasks: ≥ half of
	// 8), 5 small (2…3 tasks); 7 parallel × 0.5 = 3.5 → 4 balanced.
	var count [3]int
	balanced := 0
	for i, j := range jobs {
		if j.ID != int64(i+1) || j.Submit != 0 || j.Program != "" {
			t.Errorf("job %+v", j)
		}
		var cl Class
		switch {
		case j.Tasks == 1:
			cl = Sequential
		case j.Tasks <= 3:
			cl = SmallParallel
		case j.Tasks <= 8:
			cl = LargeParallel
		default:
			t.Fatalf("job %d: %d tasks", j.ID, j.Tasks)
		}
		count[cl]++
		if r := c.PTime[cl]; j.Work < r.Lo || j.Work > r.Hi {
			t.Errorf("%s job %d: time %v outside %v", cl, j.ID, j.Work, r)
		}
		if j.Balanced {
			if cl == Sequential {
				t.Errorf("sequential job %d is balanced", j.ID)
			}
			balanced++
		}
	}
	if count != [3]int{3, 5, 2} || balanced != 4 {
		t.Errorf("classes %v balanced %d, want [3 5 2] and 4", count, balanced)
	}
	again, _ := Generate(context.Background(), c)
	if !reflect.DeepEqual(jobs, again) {
		t.Error("the same config gave another workload")
	}
	c.Seed = 2
	if other, _ := Generate(context.Background(), c); reflect.DeepEqual(jobs, other) {
		t.Error("seeds 1 and 2 gave the same workload")
	}
}

func TestGeneratorSpanAndPrograms(t *testing.T) {
	r := Range{10 * time.Minute, 20 * time.Minute}
	c := GenConfig{Nodes: 4, Jobs: 300, SeqShare: 0.5, LargeShare: 0.5, Span: time.Hour, Programs: 2, ProgramVar: 0.1, Seed: 7, PTime: [3]Range{r, r, r}}
	jobs, err := Generate(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	progs := map[string][]time.Duration{}
	for i, j := range jobs {
		if j.Submit < 0 || j.Submit > time.Hour || (i > 0 && j.Submit < jobs[i-1].Submit) {
			t.Fatalf("job %d submit %v: not in [0, 1h] in order", j.ID, j.Submit)
		}
		progs[j.Program] = append(progs[j.Program], j.Work)
	}
	if len(progs) != 4 || progs["seq-0"] == nil || progs["large-1"] == nil {
		t.Fatalf("programs %v, want seq-0, seq-1, large-0, large-1", len(progs))
	}
	// Every time of a program is within ±10% (+ rounding) of one base.
	for p, ts := range progs {
		lo, hi := ts[0], ts[0]
		for _, x := range ts {
			lo, hi = min(lo, x), max(hi, x)
		}
		if float64(hi) > float64(lo)*1.1/0.9+float64(time.Millisecond) {
			t.Errorf("program %s: times %v…%v spread more than ±10%%", p, lo, hi)
		}
	}
}

func TestGeneratorErrors(t *testing.T) {
	r := Range{time.Minute, time.Hour}
	_, err := Generate(context.Background(), GenConfig{Nodes: 4, Jobs: 10, SeqShare: 0.7, LargeShare: 0.5, BalancedShare: 2, PTime: [3]Range{r, r, r}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"more than 1", "BalancedShare 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not mention %q", err, want)
		}
	}
	// 4 nodes have no small parallel size (2 is already half).
	if _, err := Generate(context.Background(), GenConfig{Nodes: 4, Jobs: 10, SeqShare: 0.5, PTime: [3]Range{r, r, r}}); err == nil || !strings.Contains(err.Error(), "5 small parallel jobs, but 4 nodes have no small parallel size") {
		t.Errorf("small jobs on 4 nodes: %v", err)
	}
}
