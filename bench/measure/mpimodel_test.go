package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/sharing"
)

// The model of a calibration: the template the counters point to, and a
// dedicated run on the simulated network as long as the calibrated one.
// The counters are those of mpi/testdata/workload's programs on 2 ranks
// (blocking: 40 iterations of 2 Sendrecvs; nonblocking: 20 iterations of
// Isend/Irecv and an Allreduce).
func TestDeriveMPIModel(t *testing.T) {
	net := jss.DefaultModelConfig(sharing.BCS).Network
	ms := time.Millisecond
	for _, c := range []struct {
		name       string
		prog       MPIProgram
		cal        calInput
		pattern    bench.Pattern
		sync       bench.Sync
		iterations int
	}{
		{"blocking", MPIProgram{Name: "b"}, calInput{2, 563 * ms, 162, 655530, 4}, bench.News, bench.Blocking, 40},
		{"nonblocking", MPIProgram{Name: "nb"}, calInput{2, 530 * ms, 122, 328130, 44}, bench.News, bench.NonBlocking, 22},
		{"sync given", MPIProgram{Name: "nb", Sync: bench.Blocking}, calInput{2, 530 * ms, 122, 328130, 44}, bench.News, bench.Blocking, 20},
		{"4 ranks", MPIProgram{Name: "b4"}, calInput{4, 2 * time.Second, 4*4*100 + 4*2, 4 * 4096 * 400, 8}, bench.News, bench.Blocking, 100},
		{"collectives only", MPIProgram{Name: "c"}, calInput{4, time.Second, 4 * 50 * 2 * 3 / 4, 0, 4 * 50}, bench.Barrier, bench.NonBlocking, 50},
		{"silent", MPIProgram{Name: "s"}, calInput{3, time.Second, 0, 0, 0}, bench.Barrier, bench.NonBlocking, 1},
		{"one rank", MPIProgram{Name: "one", Imbalance: 2 * ms}, calInput{1, time.Second, 0, 0, 2}, bench.Barrier, bench.NonBlocking, 1},
	} {
		m, err := DeriveMPIModel(c.prog, c.cal.calibration(), net)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		tm, err := bench.ParseTemplate(m.Template)
		if err != nil {
			t.Errorf("%s: template %q: %v", c.name, m.Template, err)
			continue
		}
		if tm.Pattern != c.pattern || tm.Sync != c.sync || m.Iterations != c.iterations || tm.Imbalance != c.prog.Imbalance {
			t.Errorf("%s: %s × %d (%s), want %s,%s × %d", c.name, m.Template, m.Iterations, m.Why, c.pattern, c.sync, c.iterations)
		}
		// What the simulator will run alone lasts the calibrated runtime.
		ded := jss.NewProgram(tm, c.cal.ranks, m.Iterations, 1).RunDedicated(net).Runtime
		if d := ded - c.cal.runtime; d < -c.cal.runtime/50 || d > c.cal.runtime/50 {
			t.Errorf("%s: simulated alone %v, calibrated %v", c.name, ded, c.cal.runtime)
		}
		if m.Why == "" {
			t.Errorf("%s: no reason", c.name)
		}
	}
	// A program faster than the simulated network: compute floored, said.
	m, err := DeriveMPIModel(MPIProgram{Name: "fast"}, calInput{2, ms, 2000, 2000 * 4096, 2}.calibration(), net)
	if err != nil || !strings.Contains(m.Why, "floored") {
		t.Errorf("fast: %+v, %v", m, err)
	}
	if _, err := DeriveMPIModel(MPIProgram{Name: "z"}, calInput{2, 0, 0, 0, 0}.calibration(), net); err == nil {
		t.Error("a zero runtime: no error")
	}
}

// calInput is a calibration in a table's short form.
type calInput struct {
	ranks       int
	runtime     time.Duration
	sent, bytes uint64
	collectives uint64
}

func (c calInput) calibration() experiment.MPICalibration {
	return experiment.MPICalibration{Ranks: c.ranks, Runtime: c.runtime, Sent: c.sent, SentBytes: c.bytes, Collectives: c.collectives}
}
