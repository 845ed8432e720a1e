package gang_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
	"github.com/cosched/cosched/internal/scriptarg"
)

// TestScripts runs the interaction scripts under testdata/. Each script is a
// sequence of directives; times and estimates are in seconds:
//
//	config procs=10 policy=easy [mpl=2] [alt] [limits] [mem=512]
//	       [resv=2|inf] [mode=fixed] [weights=(ww=1,wx=5)]
//	                                               new scheduler (mem in bytes per processor,
//	                                               alt: alternative scheduling; resv, mode,
//	                                               weights: priority backfill)
//	submit at=0 id=1 procs=4 est=10 [mem=100] [extend]  a job arrives (extend: runs past its limit)
//	finish at=5 id=1                               a job ends
//	schedule at=5                                  a pass: prints the decisions
//	explain id=2                                   why a job waits
//	wakeup                                         NextWakeup
//	slice at=0 [n=3]                               the rows of the next n slices
//	offline at=1 cols=(2,3) / online …             columns leave or rejoin service
//	run                                            simulate the jobs listed below
//	<id> <submit> <procs> <estimate> <runtime>     (one per line) and print each
//	                                               job's start and end
//
// Regenerate the expected output with `go test ./gang -run TestScripts -rewrite`
// and review the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var rec *gangtest.Recorder
		var cfg gang.Config
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "config" && rec == nil {
				t.Fatalf("%s: %s before config", d.Pos, d.Cmd)
			}
			switch d.Cmd {
			case "config":
				cfg = gang.Config{MPL: 1, Policy: gang.Policy(scriptarg.Get(t, d, "policy", "fcfs"))}
				cfg.Machine.Processors = scriptarg.Get(t, d, "procs", 0)
				cfg.Machine.MemoryPerProcessor = int64(scriptarg.Get(t, d, "mem", 0))
				cfg.MPL = scriptarg.Get(t, d, "mpl", 1)
				cfg.EnforceLimits = d.HasArg("limits")
				cfg.AlternativeScheduling = d.HasArg("alt")
				if err := backfillArgs(t, d, &cfg); err != nil {
					return "error: " + err.Error()
				}
				var err error
				rec, err = gangtest.NewRecorder(cfg)
				if err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "submit":
				j := gang.Job{
					ID:         gang.JobID(scriptarg.Get(t, d, "id", 0)),
					Processors: scriptarg.Get(t, d, "procs", 1),
					Estimate:   secArg(t, d, "est", 0),
					Memory:     int64(scriptarg.Get(t, d, "mem", 0)),
					Extend:     d.HasArg("extend"),
				}
				now := secArg(t, d, "at", 0)
				j.Submit = now
				if err := rec.Submit(j, now); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "finish":
				if err := rec.Finished(gang.JobID(scriptarg.Get(t, d, "id", 0)), secArg(t, d, "at", 0)); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "schedule":
				ds, err := rec.Schedule(secArg(t, d, "at", 0))
				if err != nil {
					return "error: " + err.Error()
				}
				if len(ds) == 0 {
					return "no decisions"
				}
				return gangtest.Format(ds)
			case "offline", "online":
				var cols []int
				arg, _ := d.Arg("cols")
				for _, v := range arg.Vals {
					c, err := strconv.Atoi(v)
					if err != nil {
						t.Fatalf("%s: cols: %v", d.Pos, err)
					}
					cols = append(cols, c)
				}
				if err := rec.S.SetOffline(cols, d.Cmd == "offline", secArg(t, d, "at", 0)); err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("%d online", rec.S.Online())
			case "slice":
				var rows []string
				for i := 0; i < scriptarg.Get(t, d, "n", 1); i++ {
					rows = append(rows, strconv.Itoa(rec.S.Slice(secArg(t, d, "at", 0))))
				}
				return "rows " + strings.Join(rows, " ")
			case "explain":
				return rec.S.Explain(gang.JobID(scriptarg.Get(t, d, "id", 0))).String()
			case "wakeup":
				if at, ok := rec.S.NextWakeup(); ok {
					return at.String()
				}
				return "none"
			case "run":
				return runScript(t, d, cfg)
			}
			t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

func runScript(t *testing.T, d *datadriven.TestData, cfg gang.Config) string {
	var jobs []gangtest.Run
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Fatalf("%s: run line %q: want id submit procs estimate runtime", d.Pos, line)
		}
		n := make([]int, 5)
		for i, s := range f {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s: run line %q: %v", d.Pos, line, err)
			}
			n[i] = v
		}
		sec := func(v int) time.Duration { return time.Duration(v) * time.Second }
		jobs = append(jobs, gangtest.Run{
			Job:     gang.Job{ID: gang.JobID(n[0]), Submit: sec(n[1]), Processors: n[2], Estimate: sec(n[3])},
			Runtime: sec(n[4]),
		})
	}
	out, _, err := gangtest.Simulate(cfg, jobs)
	if err != nil {
		return "error: " + err.Error()
	}
	ids := make([]gang.JobID, 0, len(out))
	for id := range out {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		o := out[id]
		fmt.Fprintf(&b, "job %d: start %v end %v", id, o.Start, o.End)
		if o.Killed {
			b.WriteString(" (killed)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func secArg(t *testing.T, d *datadriven.TestData, key string, def int) time.Duration {
	return time.Duration(scriptarg.Get(t, d, key, def)) * time.Second
}

// backfillArgs reads the priority-backfill options of a config directive.
func backfillArgs(t *testing.T, d *datadriven.TestData, cfg *gang.Config) error {
	if d.HasArg("resv") {
		n, err := gang.ParseReservations(scriptarg.Get(t, d, "resv", ""))
		if err != nil {
			return err
		}
		cfg.Backfill.Reservations = n
	}
	if d.HasArg("mode") {
		m, err := gang.ParseReservationMode(scriptarg.Get(t, d, "mode", ""))
		if err != nil {
			return err
		}
		cfg.Backfill.Mode = m
	}
	if arg, ok := d.Arg("weights"); ok {
		w, err := gang.ParseWeights(strings.Join(arg.Vals, ","))
		if err != nil {
			return err
		}
		cfg.Backfill.Weights = &w
	}
	return nil
}
