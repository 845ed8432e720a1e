package rank

import (
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
)

// The template given wins over $COSCHED_BENCH, and every setting reaches
// the program.
func TestSettingsProgram(t *testing.T) {
	t.Setenv(bench.EnvTemplate, "fast,25ms,news,NB") // ignored: Template is given
	s := Settings{Template: "10,5,transpose,B", Runtime: time.Minute, Work: "wall", MessageSize: "1KiB", Seed: 9}
	set := map[string]bool{"Template": true, "Runtime": true, "Work": true, "MessageSize": true, "Seed": true}
	s.Given = func(n string) bool { return set[n] }
	p, err := s.Program()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := bench.ParseTemplate("10,5,transpose,B")
	if p.Config.Template != want || p.Runtime != time.Minute || p.Config.Iterations != 0 || p.Config.Work.String() != "wall" || p.Config.MessageSize != 1024 || p.Config.Seed != 9 || p.SeedFromJob {
		t.Errorf("program %+v", p)
	}
	// Without Template, $COSCHED_BENCH is read.
	t.Setenv(bench.EnvTemplate, "50ms,25ms,barrier,NB")
	delete(set, "Template")
	if p, err = s.Program(); err != nil || p.Config.Template.Pattern != bench.Barrier || p.SeedFromJob {
		t.Errorf("from the environment: %+v, %v", p, err)
	}
	delete(set, "Seed")
	if p, err = s.Program(); err != nil || !p.SeedFromJob {
		t.Errorf("without Seed: %+v, %v", p, err)
	}
}
