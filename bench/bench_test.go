package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseTemplate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Template
	}{
		{"50ms,25ms,news,NB", Template{50 * time.Millisecond, 25 * time.Millisecond, News, NonBlocking}},
		{"50,25,transpose,b", Template{50 * time.Millisecond, 25 * time.Millisecond, Transpose, Blocking}},
		{" 0.2s , 100ms , Barrier , nb ", Template{200 * time.Millisecond, 100 * time.Millisecond, Barrier, NonBlocking}},
		{"1.5,0,news,B", Template{1500 * time.Microsecond, 0, News, Blocking}},
	} {
		got, err := ParseTemplate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTemplate(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		back, err := ParseTemplate(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q via %q: %+v, %v", c.in, got.String(), back, err)
		}
	}
}

func TestParseTemplateErrors(t *testing.T) {
	for in, wants := range map[string][]string{
		"50ms,25ms,news":          {"want G,V,COMM,SYNC"},
		"fast,25ms,ring,XB":       {`grain "fast"`, `unknown pattern "ring"`, `unknown sync "XB"`},
		"50ms,200ms,news,B":       {"imbalance 200ms must be between 0 and 2g (100ms)"},
		"0,0,barrier,NB":          {"grain 0s must be positive"},
		"50ms,-1ms,transpose,NB":  {"imbalance -1ms"},
		"50ms,25ms,news,NB,extra": {"want G,V,COMM,SYNC"},
	} {
		_, err := ParseTemplate(in)
		if err == nil {
			t.Errorf("ParseTemplate(%q) accepted", in)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseTemplate(%q) error %q lacks %q", in, err, w)
			}
		}
	}
}

func TestComputeTimeRange(t *testing.T) {
	tp := Template{Grain: 100 * time.Millisecond, Imbalance: 50 * time.Millisecond}
	if lo, hi := tp.ComputeTime(0), tp.ComputeTime(0.999999); lo != 75*time.Millisecond || hi >= 125*time.Millisecond || hi < 124*time.Millisecond {
		t.Errorf("range [%v, %v], want [75ms, 125ms)", lo, hi)
	}
}

func TestWorkloads(t *testing.T) {
	ws := Workloads()
	if len(ws) != 5 {
		t.Fatalf("%d workloads", len(ws))
	}
	want := map[string]string{
		"w0": "50ms,25ms,transpose,B 100ms,50ms,transpose,B 200ms,100ms,transpose,B",
		"w1": "50ms,25ms,transpose,NB 100ms,50ms,transpose,NB 200ms,100ms,transpose,NB",
		"w2": "50ms,25ms,news,B 100ms,50ms,news,B 100ms,100ms,news,B",
		"w3": "50ms,25ms,news,NB 100ms,50ms,news,NB 200ms,100ms,news,NB",
		"w4": "50ms,25ms,barrier,NB 100ms,50ms,barrier,NB 200ms,100ms,barrier,NB",
	}
	for _, w := range ws {
		var s []string
		for _, tp := range w.Templates {
			if err := tp.Validate(); err != nil {
				t.Errorf("%s: %v", w.Name, err)
			}
			s = append(s, tp.String())
		}
		if got := strings.Join(s, " "); got != want[w.Name] {
			t.Errorf("%s = %s, want %s", w.Name, got, want[w.Name])
		}
	}
	if _, err := LookupWorkload("W3"); err != nil {
		t.Error(err)
	}
	if _, err := LookupWorkload("w9"); err == nil || !strings.Contains(err.Error(), "w0, w1, w2, w3, w4") {
		t.Errorf("unknown workload: %v", err)
	}
}

func TestGrid(t *testing.T) {
	for n, want := range map[int][2]int{1: {1, 1}, 2: {1, 2}, 4: {2, 2}, 6: {2, 3}, 7: {1, 7}, 9: {3, 3}, 12: {3, 4}, 32: {4, 8}} {
		if r, c := Grid(n); r != want[0] || c != want[1] {
			t.Errorf("Grid(%d) = %d×%d, want %d×%d", n, r, c, want[0], want[1])
		}
	}
}

func TestNewsSteps(t *testing.T) {
	// 3×3 torus, process 4 in the middle: north 1, south 7, east 5, west 3.
	got := Steps(News, 4, 9)
	want := []Step{{To: 1, From: 7}, {To: 7, From: 1}, {To: 5, From: 3}, {To: 3, From: 5}}
	if len(got) != len(want) {
		t.Fatalf("Steps(news, 4, 9) = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Steps(news, 4, 9) = %v, want %v", got, want)
		}
	}
	// 1×2: no north/south (self); east and west are both the other process.
	if got := Steps(News, 0, 2); len(got) != 2 || got[0] != (Step{1, 1}) || got[1] != (Step{1, 1}) {
		t.Errorf("Steps(news, 0, 2) = %v", got)
	}
	if got := Steps(News, 0, 1); len(got) != 0 {
		t.Errorf("a single process exchanges nothing: %v", got)
	}
	if got := Steps(Barrier, 0, 8); got != nil {
		t.Errorf("barrier steps %v", got)
	}
}

// In every step, each process's receive is matched by exactly one send
// issued in that same step: the order cannot deadlock, and message counts
// balance.
func TestStepsMatchUp(t *testing.T) {
	for _, pat := range []Pattern{News, Transpose} {
		for n := 1; n <= 40; n++ {
			steps := make([][]Step, n)
			for p := range steps {
				steps[p] = Steps(pat, p, n)
				if len(steps[p]) != len(steps[0]) {
					t.Fatalf("%s n=%d: processes differ in step count", pat, n)
				}
				if got := MessagesPerIteration(pat, p, n); got != len(steps[p]) {
					t.Fatalf("%s n=%d: %d messages, %d steps", pat, n, got, len(steps[p]))
				}
			}
			for s := range steps[0] {
				for p := 0; p < n; p++ {
					from := steps[p][s].From
					if steps[from][s].To != p {
						t.Fatalf("%s n=%d step %d: process %d receives from %d, which sends to %d", pat, n, s, p, from, steps[from][s].To)
					}
				}
			}
		}
	}
	if MessagesPerIteration(Transpose, 0, 32) != 31 || MessagesPerIteration(News, 0, 16) != 4 || MessagesPerIteration(Barrier, 0, 16) != 0 {
		t.Error("message counts")
	}
}
