package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/sharing"
)

const ms = time.Millisecond

// fullSpec is the design space of the BCS study, as in the CLI's example.
func fullSpec() Spec {
	loads, err := ParseLoads("0.1:1.6:0.1")
	if err != nil {
		panic(err)
	}
	return Spec{
		Modes:     []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS},
		MPLs:      []int{1, 2, 3, 4},
		Slices:    []time.Duration{5 * ms, 10 * ms, 50 * ms, 100 * ms},
		Loads:     loads,
		Workloads: []string{"w0", "w1", "w2", "w3", "w4"},
		MemMeans:  []int64{0, 128e6, 256e6},
		Jobs:      1000,
		Seeds:     []uint64{1},
		Policy:    gang.EASY,
	}
}

func TestExpandFullExampleCountsBFOnce(t *testing.T) {
	s := fullSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	pts := Expand(s)
	// Per (workload, mem, load, seed): 1 space + 2 modes × 4 MPLs × 4 slices = 33.
	if want := 5 * 3 * 16 * 1 * 33; len(pts) != want {
		t.Fatalf("%d points, want %d", len(pts), want)
	}
	perMode := map[sharing.Mode]int{}
	for _, p := range pts {
		perMode[p.Mode]++
		if p.Mode == sharing.Space && (p.MPL != 1 || p.Slice != 0) {
			t.Fatalf("space point %v: want MPL 1, slice 0", p)
		}
		if p.Jobs != 1000 || p.Policy != gang.EASY {
			t.Fatalf("point %v lacks the shared settings", p)
		}
	}
	if perMode[sharing.Space] != 240 || perMode[sharing.Gang] != 3840 || perMode[sharing.BCS] != 3840 {
		t.Errorf("points per mode %v, want space 240, gang 3840, bcs 3840", perMode)
	}
	seen := map[Point]bool{}
	for _, p := range pts {
		if seen[p] {
			t.Fatalf("point %v twice", p)
		}
		seen[p] = true
	}
}

func TestExpandOrder(t *testing.T) {
	s := Spec{
		Modes:     []sharing.Mode{sharing.BCS, sharing.Space},
		MPLs:      []int{2, 1},
		Slices:    []time.Duration{50 * ms, 10 * ms},
		Loads:     []float64{0.8, 0.4},
		Workloads: []string{"w3", "w0"},
		MemMeans:  []int64{0},
		Jobs:      5,
		Seeds:     []uint64{7, 3},
		Policy:    gang.EASY,
	}
	var got []string
	for _, p := range Expand(s) {
		got = append(got, p.Workload+" "+p.String())
	}
	var want []string
	for _, w := range []string{"w3", "w0"} {
		for _, load := range []string{"0.8", "0.4"} {
			for _, seed := range []string{"7", "3"} {
				for _, mpl := range []string{"2", "1"} {
					for _, d := range []string{"50ms", "10ms"} {
						want = append(want, w+" bcs mpl="+mpl+" slice="+d+" load="+load+" "+w+" mem=0 jobs=5 seed="+seed+" easy")
					}
				}
				want = append(want, w+" space mpl=1 slice=0s load="+load+" "+w+" mem=0 jobs=5 seed="+seed+" easy")
			}
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExpandDropsDuplicates(t *testing.T) {
	s := Spec{
		Modes:     []sharing.Mode{sharing.Gang, sharing.Space, sharing.Gang, sharing.Space},
		MPLs:      []int{3, 3, 1},
		Slices:    []time.Duration{50 * ms, 50 * ms},
		Loads:     []float64{0.8, 0.8},
		Workloads: []string{"w3", "w3"},
		MemMeans:  []int64{0, 0},
		Jobs:      5,
		Seeds:     []uint64{1, 1},
		Policy:    gang.EASY,
	}
	pts := Expand(s)
	var got []string
	for _, p := range pts {
		got = append(got, p.String())
	}
	want := []string{
		"gang mpl=3 slice=50ms load=0.8 w3 mem=0 jobs=5 seed=1 easy",
		"gang mpl=1 slice=50ms load=0.8 w3 mem=0 jobs=5 seed=1 easy",
		"space mpl=1 slice=0s load=0.8 w3 mem=0 jobs=5 seed=1 easy",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExpandBFOnlyNeedsNoMPLOrSlice(t *testing.T) {
	s := Spec{Modes: []sharing.Mode{sharing.Space}, Loads: []float64{0.5}, Workloads: []string{"w1"}, MemMeans: []int64{0}, Jobs: 1, Seeds: []uint64{1}, Policy: gang.FCFS}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if pts := Expand(s); len(pts) != 1 || pts[0].MPL != 1 {
		t.Fatalf("points %v", pts)
	}
}

func TestSpecValidateListsEveryProblem(t *testing.T) {
	s := Spec{
		Modes:     []sharing.Mode{"local", sharing.BCS},
		MPLs:      []int{0, 2},
		Slices:    []time.Duration{-ms},
		Loads:     []float64{0, 0.5},
		Workloads: []string{"w9"},
		MemMeans:  []int64{-1},
		Jobs:      0,
		Policy:    "lifo",
	}
	err := s.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`sweep: invalid spec`, `unknown mode "local"`, "MPL 0", "slice -1ms", "load 0:", `unknown workload "w9"`,
		"memory mean -1", "jobs 0", "no seed", `unknown policy "lifo"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if got := strings.Count(msg, "\n") + 1; got != 9 {
		t.Errorf("%d problems reported, want 9:\n%s", got, msg)
	}
	if err := (Spec{}).Validate(); err == nil || !strings.Contains(err.Error(), "no mode") || !strings.Contains(err.Error(), "no load") {
		t.Errorf("empty spec: %v", err)
	}
	if err := (Spec{Modes: []sharing.Mode{sharing.Gang}, Loads: []float64{1}, Workloads: []string{"w0"}, MemMeans: []int64{0}, Jobs: 1, Seeds: []uint64{1}, Policy: gang.EASY}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "no MPL") || !strings.Contains(err.Error(), "no time slice") {
		t.Errorf("gang without MPL or slice: %v", err)
	}
}

func TestSpecPFCFSOnlyInModeBF(t *testing.T) {
	s := fullSpec()
	s.Policy = "pfcfs"
	s.Modes = []sharing.Mode{sharing.Space}
	if err := s.Validate(); err != nil {
		t.Errorf("space with pfcfs: %v", err)
	}
	s.Modes = []sharing.Mode{sharing.Space, sharing.Gang}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "policy pfcfs is space sharing: it runs in mode space, not gang") {
		t.Errorf("gang with pfcfs: %v", err)
	}
}
