package ctl_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/scriptarg"
	"github.com/cosched/cosched/node/ctl"
)

// origin is time zero of every script; times in scripts are seconds after it.
var origin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestScripts runs the interaction scripts under testdata/. Directives:
//
//	config [procs=16] [mpl=2] [policy=fcfs] [alt] [history=N] [grace=S]   a new machine
//	agent-up name=a cpus=2 [live=(1/0/100,1/1/101/stopped)] [exits=(1/0/0,…)] [inc=7 launched=(1,2) floor=0]
//	                                 an agent connects, with its ranks (job/rank/pid[/stopped]),
//	                                 the exits it saw meanwhile (job/rank/code[/signal]), its
//	                                 life (inc) and the jobs that life got launches for
//	agent-down name=a                its connection broke (it may come back)
//	agent-gone name=a                it left the cluster
//	submit procs=2 limit=10 [extend] [key=K]  a job arrives (with a submit key)
//	cancel id=1
//	exit job=1 rank=0 node=a [code=1] [signal=SIGKILL] [err=text]
//	tick                             a pass (every directive takes at=S: the clock, kept otherwise)
//	strobe [n=3]                     the rows of the next n slices
//	jobs [all]                       the job table
//	restart                          rebuild a machine from every record so far (the journal):
//	                                 prints its table if it differs from the old one's, and
//	                                 carries on with the new machine
//
// Each input prints the effects it produced (Ready): records, messages,
// strobe targets, state changes. The input is stamped by a Tick before it
// and scheduled by one after it, as the controller's shell does.
//
// Regenerate with `go test ./node/ctl -run TestScripts -rewrite` and review
// the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var m *ctl.Machine
		var cfg ctl.Config
		var journal []ctl.Record
		at := origin
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.HasArg("at") {
				at = origin.Add(time.Duration(scriptarg.Get(t, d, "at", 0)) * time.Second)
			}
			if d.Cmd != "config" && m == nil {
				t.Fatalf("%s: %s before config", d.Pos, d.Cmd)
			}
			var out strings.Builder
			input := func(f func() error) string {
				m.Tick(at)
				err := f()
				m.Tick(at)
				if err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
				journal = append(journal, drain(m, &out)...)
				if out.Len() == 0 {
					return "ok"
				}
				return out.String()
			}
			switch d.Cmd {
			case "config":
				cfg = ctl.Config{MaxColumns: scriptarg.Get(t, d, "procs", 16), MPL: scriptarg.Get(t, d, "mpl", 1),
					Policy: gang.Policy(scriptarg.Get(t, d, "policy", "fcfs")), Alternates: d.HasArg("alt"),
					History: scriptarg.Get(t, d, "history", 0), ReconnectGrace: time.Duration(scriptarg.Get(t, d, "grace", 0)) * time.Second}
				var err error
				if m, err = ctl.New(cfg, origin); err != nil {
					return "error: " + err.Error()
				}
				at, journal = origin, drain(m, &strings.Builder{})
				return "ok"
			case "agent-up":
				r := ctl.AgentReport{Name: scriptarg.Get(t, d, "name", ""), CPUs: scriptarg.Get(t, d, "cpus", 1)}
				for _, v := range listArg(d, "live") {
					f := strings.Split(v, "/")
					r.Ranks = append(r.Ranks, ctl.LiveRank{Job: int64(atoi(t, f[0])), Rank: atoi(t, f[1]), PID: atoi(t, f[2]), Stopped: len(f) > 3})
				}
				for _, v := range listArg(d, "exits") {
					f := strings.Split(v, "/")
					x := ctl.RankExit{Job: int64(atoi(t, f[0])), Rank: atoi(t, f[1]), Code: atoi(t, f[2])}
					if len(f) > 3 {
						x.Signal = f[3]
					}
					r.Exits = append(r.Exits, x)
				}
				r.Incarnation = uint64(scriptarg.Get(t, d, "inc", 0))
				for _, v := range listArg(d, "launched") {
					r.Launched = append(r.Launched, int64(atoi(t, v)))
				}
				r.LaunchedFloor = int64(scriptarg.Get(t, d, "floor", 0))
				return input(func() error { return m.AgentUp(r) })
			case "agent-down":
				return input(func() error { m.AgentDown(scriptarg.Get(t, d, "name", "")); return nil })
			case "agent-gone":
				return input(func() error { m.AgentGone(scriptarg.Get(t, d, "name", ""), "left the cluster"); return nil })
			case "submit":
				spec := api.JobSpec{Command: []string{"true"}, Processors: scriptarg.Get(t, d, "procs", 1),
					TimeLimit: api.Duration{D: time.Duration(scriptarg.Get(t, d, "limit", 60)) * time.Second}}
				if d.HasArg("extend") {
					spec.Overrun = "extend"
				}
				spec.SubmitKey = scriptarg.Get(t, d, "key", "")
				return input(func() error {
					id, err := m.Submit(spec)
					if err == nil {
						fmt.Fprintf(&out, "id %d\n", id)
					}
					return err
				})
			case "cancel":
				return input(func() error { return m.Cancel(int64(scriptarg.Get(t, d, "id", 0))) })
			case "exit":
				x := ctl.RankExit{Job: int64(scriptarg.Get(t, d, "job", 0)), Rank: scriptarg.Get(t, d, "rank", 0), Node: scriptarg.Get(t, d, "node", ""),
					Code: scriptarg.Get(t, d, "code", 0), Signal: scriptarg.Get(t, d, "signal", ""), Err: scriptarg.Get(t, d, "err", "")}
				return input(func() error {
					if !m.RankExit(x) {
						out.WriteString("ignored\n")
					}
					return nil
				})
			case "tick":
				return input(func() error { return nil })
			case "strobe":
				var rows []string
				for range scriptarg.Get(t, d, "n", 1) {
					s := m.Slice(at)
					rows = append(rows, strconv.Itoa(s.Row))
				}
				return "rows " + strings.Join(rows, " ")
			case "jobs":
				return table(m, d.HasArg("all"))
			case "restart":
				r, err := ctl.Restore(cfg, journal, at)
				if err != nil {
					return "error: " + err.Error()
				}
				journal = append(journal, drain(r, &strings.Builder{})...)
				old, got := table(m, true), table(r, true)
				m = r
				if old != got {
					return "restored table differs:\n" + got
				}
				return "restored the same table"
			}
			t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// drain formats a machine's Ready into out, acknowledges it, and returns
// its records.
func drain(m *ctl.Machine, out *strings.Builder) []ctl.Record {
	rd := m.Ready()
	for _, r := range rd.Records {
		fmt.Fprintf(out, "persist %s\n", formatRecord(r))
	}
	for _, msg := range rd.Messages {
		switch {
		case msg.Launch != nil:
			l := msg.Launch
			var rs []string
			for _, r := range l.Ranks {
				rs = append(rs, fmt.Sprintf("%d@%d", r.Rank, r.Slot))
			}
			fmt.Fprintf(out, "send %s: launch job %d row %d rows %v ranks %s\n", msg.To, l.Job, l.Row, l.Rows, strings.Join(rs, ","))
		case msg.Kill != nil:
			fmt.Fprintf(out, "send %s: kill job %d (%s)\n", msg.To, msg.Kill.Job, msg.Kill.Reason)
		case msg.Alternate != nil:
			a := msg.Alternate
			fmt.Fprintf(out, "send %s: alternate job %d row %d on=%v\n", msg.To, a.Job, a.Row, a.On)
		}
	}
	if rd.MembersChanged {
		fmt.Fprintf(out, "strobe targets [%s]\n", strings.Join(rd.Targets, " "))
	}
	for _, c := range rd.Changes {
		fmt.Fprintf(out, "job %d %s", c.Job, c.State)
		if c.Reason != "" {
			fmt.Fprintf(out, ": %s", c.Reason)
		}
		out.WriteByte('\n')
	}
	m.Advance()
	return rd.Records
}

func formatRecord(r ctl.Record) string {
	s := r.Kind.String()
	switch r.Kind {
	case ctl.RecOrigin:
	case ctl.RecAgent:
		s += fmt.Sprintf(" %s cols %d+%d", r.Agent, r.Base, r.CPUs)
	case ctl.RecSubmitted:
		s += fmt.Sprintf(" job %d at %v procs %d", r.Job, r.At.Sub(origin), r.Spec.Processors)
	case ctl.RecStarted:
		s += fmt.Sprintf(" job %d at %v row %d cols %v nodes %v", r.Job, r.At.Sub(origin), r.Row, r.Columns, r.Nodes)
		if len(r.Incarnations) > 0 {
			s += fmt.Sprintf(" lives %v", r.Incarnations) // fmt sorts map keys
		}
	case ctl.RecRows:
		s += fmt.Sprintf(" job %d %v", r.Job, r.Rows)
	case ctl.RecRank:
		s += fmt.Sprintf(" job %d %s", r.Job, formatRank(*r.Rank))
	case ctl.RecEnding, ctl.RecFinished:
		s += fmt.Sprintf(" job %d %s (%s)", r.Job, r.State, r.Reason)
	}
	return s
}

func formatRank(r api.RankInfo) string {
	s := fmt.Sprintf("rank %d on %s", r.Rank, r.Node)
	if r.PID != 0 {
		s += fmt.Sprintf(" pid %d", r.PID)
	}
	if r.Exited {
		s += fmt.Sprintf(" exited %d", r.Code)
		if r.Signal != "" {
			s += " " + r.Signal
		}
		if r.Error != "" {
			s += " (" + r.Error + ")"
		}
	}
	return s
}

// table renders the job table: everything Restore must reproduce.
func table(m *ctl.Machine, all bool) string {
	var b strings.Builder
	for _, j := range m.Jobs(all) {
		fmt.Fprintf(&b, "job %d %s", j.ID, j.State)
		if j.Reason != "" {
			fmt.Fprintf(&b, " (%s)", j.Reason)
		}
		fmt.Fprintf(&b, " submit %v", j.Submit.Sub(origin))
		if !j.Start.IsZero() {
			fmt.Fprintf(&b, " start %v row %d rows %v cols %v", j.Start.Sub(origin), j.Row, j.Rows, j.Columns)
		}
		if !j.End.IsZero() {
			fmt.Fprintf(&b, " end %v", j.End.Sub(origin))
		}
		if j.Ending != "" {
			fmt.Fprintf(&b, " ending %s", j.Ending)
		}
		b.WriteByte('\n')
		for _, r := range j.Ranks {
			fmt.Fprintf(&b, "  %s\n", formatRank(r))
		}
	}
	if b.Len() == 0 {
		return "no jobs"
	}
	return b.String()
}

func listArg(d *datadriven.TestData, key string) []string {
	a, ok := d.Arg(key)
	if !ok {
		return nil
	}
	return slices.Clone(a.Vals)
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: not a number", s)
	}
	return n
}
