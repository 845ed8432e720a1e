package workload

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss/swf"
)

var update = flag.Bool("update", false, "rewrite builtin.json from a fresh fit of the shared KTH-SP2 trace")

// fitKTH fits the shared KTH-SP2 trace as Builtin was fitted, skipping when
// the trace is absent.
func fitKTH(t *testing.T) Model {
	t.Helper()
	path := sharedtest.Path(t, "traces", "KTH-SP2-1996-2.swf")
	rd, closer, err := swf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	m, err := FitSWF(rd, filepath.Base(path), 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// marshalModel is the form of builtin.json, and of `cosched sim fit`.
func marshalModel(t *testing.T, m Model) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := m.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestBuiltinIsTheFitOfKTH(t *testing.T) {
	fresh := marshalModel(t, fitKTH(t))
	if *update {
		if err := os.WriteFile("builtin.json", fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote builtin.json; rebuild to embed it")
		return
	}
	if !bytes.Equal(fresh, builtinJSON) {
		t.Fatalf("builtin.json is not the fit of the KTH-SP2 trace; regenerate with go test ./jss/workload -run TestBuiltin -update\nfresh fit:\n%s", fresh)
	}
	// Builtin() decodes to the same model.
	if again := marshalModel(t, Builtin()); !bytes.Equal(again, builtinJSON) {
		t.Fatalf("Builtin() does not round-trip builtin.json:\n%s", again)
	}
}

func TestEmbeddedModelIsValid(t *testing.T) {
	m := Builtin()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Processors != 100 || m.Source != "KTH-SP2-1996-2.swf" {
		t.Errorf("source %q on %d processors", m.Source, m.Processors)
	}
	jobs := 0
	for i, c := range m.Classes {
		if want := 1 << i; c.MaxSize != want {
			t.Errorf("class %d: max size %d, want %d", i, c.MaxSize, want)
		}
		jobs += c.Jobs
	}
	if jobs != 28489 { // every job line of the trace (numbered up to 28,490, one number missing)
		t.Errorf("%d jobs in the classes", jobs)
	}
	// The KTH machine ran at about 70% utilisation; the model's offered
	// load on its own machine should say so.
	if l := m.OfferedLoad(100); l < 0.6 || l > 0.8 {
		t.Errorf("offered load on 100 processors %.3f, want about 0.7", l)
	}
}

func TestFitKTH(t *testing.T) {
	m := fitKTH(t)
	if len(m.Classes) != 8 {
		t.Fatalf("%d classes, want 8 (1 … 65-128)", len(m.Classes))
	}
	for _, c := range m.Classes {
		// Every class of KTH has hundreds of jobs: real fits, no fallback.
		for what, h := range map[string]HyperErlang{"interarrival": c.Interarrival, "runtime": c.Runtime} {
			if h.Note != "" || len(h.Probs) != 2 {
				t.Errorf("class %s %s: %+v, want a two-branch fit", c.SizeRange(), what, h)
			}
		}
		if c.Sizes[len(c.Sizes)-1].Size > 100 {
			t.Errorf("class %s: size %d on a 100-processor machine", c.SizeRange(), c.Sizes[len(c.Sizes)-1].Size)
		}
	}
}

func TestOfferedLoadExcludesWideSizes(t *testing.T) {
	exp := func(mean float64) HyperErlang {
		return HyperErlang{Order: 1, Probs: []float64{1}, Rates: []float64{1 / mean}}
	}
	m := Model{Classes: []Class{
		{MaxSize: 1, Jobs: 1, Interarrival: exp(10), Runtime: exp(5), Sizes: []SizeProb{{1, 1}}},
		{MaxSize: 8, Jobs: 4, Interarrival: exp(20), Runtime: exp(8), Sizes: []SizeProb{{5, 0.25}, {6, 0.25}, {8, 0.5}}},
	}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	// On 8: 1·5/10 + 6.75·8/20 = 0.5 + 2.7 = 3.2 processor-seconds per second.
	if l := m.OfferedLoad(8); math.Abs(l-3.2/8) > 1e-12 {
		t.Errorf("load on 8: %v, want %v", l, 3.2/8)
	}
	// On 6 the size-8 jobs are excluded, sizes 5 and 6 renormalised to ½
	// each (mean 5.5), the class's rate unchanged: 0.5 + 5.5·8/20 = 2.7.
	if l := m.OfferedLoad(6); math.Abs(l-2.7/6) > 1e-12 {
		t.Errorf("load on 6: %v, want %v", l, 2.7/6)
	}
	// On 4 only class 1 is left.
	if l := m.OfferedLoad(4); math.Abs(l-0.5/4) > 1e-12 {
		t.Errorf("load on 4: %v, want %v", l, 0.5/4)
	}
	// Rate-weighted: (5/10 + 8/20) / (1/10 + 1/20) = 6.
	if r := m.MeanRuntime(); math.Abs(r-6) > 1e-12 {
		t.Errorf("mean runtime %v, want 6", r)
	}
	if m.Classes[1].Sizes[2].Prob != 0.5 {
		t.Error("OfferedLoad modified the model")
	}
}

func TestModelValidateListsEveryProblem(t *testing.T) {
	m := Model{Classes: []Class{
		{MaxSize: 3, Jobs: -1, Interarrival: HyperErlang{Order: 0, Probs: []float64{1}, Rates: []float64{-1}},
			Runtime: HyperErlang{Order: 1, Probs: []float64{0.5}, Rates: []float64{1}}, Sizes: []SizeProb{{9, 1.5}}},
	}}
	err := m.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"max size 3", "jobs -1", "interarrival: order 0", "rate 1: -1", "runtime: probabilities sum to 0.5", "size 9 is outside", "probability 1.5"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
