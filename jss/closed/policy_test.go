package closed

import (
	"slices"
	"testing"
)

func waiting(procs ...[]int) []Waiting {
	ws := make([]Waiting, len(procs))
	for i, p := range procs {
		ws[i] = Waiting{Procs: p}
	}
	return ws
}

// The three rules on small queue states, worked out by hand. Jobs are
// listed oldest first; busy marks the processors running a task.
func TestStart(t *testing.T) {
	cases := []struct {
		name    string
		busy    []bool
		waiting []Waiting
		want    map[Policy][]int
	}{
		{
			// Processor 0 is busy. J0 {0,1} is blocked by it. J1 {1,2}
			// sits behind J0 in queue 1: FCFS holds it although 1 and 2 are
			// idle; A-FCFS and LJFS start it. J2 {3} is first in queue 3
			// and starts under every policy.
			name:    "blocked head",
			busy:    []bool{true, false, false, false},
			waiting: waiting([]int{0, 1}, []int{1, 2}, []int{3}),
			want:    map[Policy][]int{FCFS: {2}, AFCFS: {1, 2}, LJFS: {1, 2}},
		},
		{
			// All idle. Queues: 0: J0 J1, 1: J1, 2: J1 J2, 3: J2.
			// FCFS: J0 heads queue 0 and starts; J1 is behind J0 in queue 0,
			// J2 behind J1 in queue 2. A-FCFS: J0 takes 0, J1 needs 0, J2
			// {2,3} is free. LJFS examines J1 (3 tasks), J2 (2), J0 (1): J1
			// takes 0-2, then J2 and J0 each need one of its processors.
			name:    "largest first",
			busy:    []bool{false, false, false, false},
			waiting: waiting([]int{0}, []int{0, 1, 2}, []int{2, 3}),
			want:    map[Policy][]int{FCFS: {0}, AFCFS: {0, 2}, LJFS: {1}},
		},
		{
			// Equal sizes: LJFS keeps arrival order. J0 and J1 both want
			// processor 1; the older wins under every policy.
			name:    "ties by arrival",
			busy:    []bool{false, false, false},
			waiting: waiting([]int{0, 1}, []int{1, 2}),
			want:    map[Policy][]int{FCFS: {0}, AFCFS: {0}, LJFS: {0}},
		},
		{
			// Disjoint heads all start, oldest first.
			name:    "disjoint",
			busy:    []bool{false, false, false},
			waiting: waiting([]int{2}, []int{0, 1}),
			want:    map[Policy][]int{FCFS: {0, 1}, AFCFS: {0, 1}, LJFS: {1, 0}},
		},
		{
			name: "nothing waiting",
			busy: []bool{false},
			want: map[Policy][]int{FCFS: nil, AFCFS: nil, LJFS: nil},
		},
	}
	for _, c := range cases {
		for _, p := range Policies() {
			busy := slices.Clone(c.busy)
			var before [][]int
			for _, w := range c.waiting {
				before = append(before, slices.Clone(w.Procs))
			}
			got := p.Start(busy, c.waiting)
			if !slices.Equal(got, c.want[p]) {
				t.Errorf("%s, %s: started %v, want %v", c.name, p, got, c.want[p])
			}
			if !slices.Equal(busy, c.busy) {
				t.Errorf("%s, %s: busy changed to %v", c.name, p, busy)
			}
			for i, w := range c.waiting {
				if !slices.Equal(w.Procs, before[i]) {
					t.Errorf("%s, %s: waiting[%d] changed to %v", c.name, p, i, w.Procs)
				}
			}
		}
	}
}

func TestAssign(t *testing.T) {
	cases := []struct {
		lens   []int
		size   int
		prefer []int
		want   []int
	}{
		{[]int{2, 0, 1, 0}, 3, nil, []int{1, 2, 3}},            // the two empty ones, then the shorter
		{[]int{1, 1, 1, 1}, 2, nil, []int{0, 1}},               // ties: lowest first
		{[]int{1, 1, 1, 1}, 2, []int{3, 1, 0, 2}, []int{1, 3}}, // ties: in prefer's order
		{[]int{0, 5, 0, 0}, 3, []int{1, 3, 2, 0}, []int{0, 2, 3}},
		{[]int{4, 3}, 2, nil, []int{0, 1}},
	}
	for _, c := range cases {
		prefer := slices.Clone(c.prefer)
		got := Assign(c.lens, c.size, prefer)
		if !slices.Equal(got, c.want) {
			t.Errorf("Assign(%v, %d, %v) = %v, want %v", c.lens, c.size, c.prefer, got, c.want)
		}
		if !slices.Equal(prefer, c.prefer) {
			t.Errorf("Assign changed prefer to %v", prefer)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{"fcfs": FCFS, " AFCFS ": AFCFS, "a-fcfs": AFCFS, "LJFS": LJFS} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePolicy("sjf"); err == nil {
		t.Error("ParsePolicy(sjf): no error")
	}
}
