package agentctl_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/cosched/cosched/node/agentctl"
)

// TestScripts runs the interaction scripts under testdata/. Directives:
//
//	config inc=7 [keeps]               a new machine: an agent's life
//	restart inc=8 [keeps] [kept=(5/0/100,…)]
//	                                   the agent's next life, which takes back
//	                                   the ranks its previous one kept
//	                                   (job/rank/pid; ended ones too)
//	connect [jobs=(5,6)] [live=(5/0/100[/stopped],…)]
//	                                   a controller's hello on a new connection,
//	                                   with the jobs and live ranks the shell sees
//	launch link=1 job=5 ranks=(0,1)    a launch read on link 1
//	current link=1                     is a row change read on link 1 applied?
//	started job=5 rank=0 pid=100       a rank's process runs
//	exit job=5 rank=0 pid=100 [code=3] a rank ended
//	written link=1 [n=1]               link 1's writer wrote its first n queued
//	                                   exits (all by default)
//	broken link=1                      link 1's writer stopped
//	disconnect link=1                  link 1's reader stopped
//	gone                               gossip: the controller left
//	state                              the machine's state
//
// Each input prints the effects it produced (Ready), or "ok".
//
// Regenerate with `go test ./node/agentctl -run TestScripts -rewrite` and
// review the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var m *agentctl.Machine
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "config" && d.Cmd != "restart" && m == nil {
				t.Fatalf("%s: %s before config", d.Pos, d.Cmd)
			}
			var out strings.Builder
			switch d.Cmd {
			case "config", "restart":
				m = agentctl.New(agentctl.Config{Incarnation: uint64(intArg(t, d, "inc", 1)), Keeps: d.HasArg("keeps")})
				var kept []agentctl.Rank
				for _, v := range listArg(d, "kept") {
					kept = append(kept, rankOf(t, v))
				}
				m.Adopt(kept)
			case "connect":
				var live []agentctl.Rank
				for _, v := range listArg(d, "live") {
					live = append(live, rankOf(t, v))
				}
				var jobs []int64
				for _, v := range listArg(d, "jobs") {
					jobs = append(jobs, int64(atoi(t, v)))
				}
				fmt.Fprintf(&out, "link %d\n", m.Connect(live, jobs))
			case "launch":
				var ranks []int
				for _, v := range listArg(d, "ranks") {
					ranks = append(ranks, atoi(t, v))
				}
				v := m.Launch(uint64(intArg(t, d, "link", 0)), int64(intArg(t, d, "job", 0)), ranks)
				if v == agentctl.Taken {
					out.WriteString("taken: start its ranks\n")
				} else {
					fmt.Fprintf(&out, "%v: dropped\n", v)
				}
			case "current":
				if m.Current(uint64(intArg(t, d, "link", 0))) {
					out.WriteString("current: applied\n")
				} else {
					out.WriteString("stale: dropped\n")
				}
			case "started":
				m.Started(int64(intArg(t, d, "job", 0)), intArg(t, d, "rank", 0), intArg(t, d, "pid", 0))
			case "exit":
				m.Exit(agentctl.Exit{Job: int64(intArg(t, d, "job", 0)), Rank: intArg(t, d, "rank", 0), PID: intArg(t, d, "pid", 0),
					Report: "code " + strconv.Itoa(intArg(t, d, "code", 0))})
			case "written":
				link := uint64(intArg(t, d, "link", 0))
				q := m.Status().Queued[link]
				n := intArg(t, d, "n", len(q))
				if n > len(q) {
					t.Fatalf("%s: %d exits queued on link %d, not %d", d.Pos, len(q), link, n)
				}
				m.Written(link, q[:n])
			case "broken":
				m.Broken(uint64(intArg(t, d, "link", 0)))
			case "disconnect":
				m.Disconnect(uint64(intArg(t, d, "link", 0)))
			case "gone":
				m.ControllerGone()
			case "state":
				return status(m)
			default:
				t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			}
			rd := m.Ready()
			formatReady(&out, &rd)
			if out.Len() == 0 {
				return "ok"
			}
			return out.String()
		})
	})
}

func formatReady(out *strings.Builder, rd *agentctl.Ready) {
	for _, l := range rd.Close {
		fmt.Fprintf(out, "close link %d\n", l)
	}
	if w := rd.Welcome; w != nil {
		fmt.Fprintf(out, "welcome link %d: inc %d", w.Link, w.Incarnation)
		if w.Keeps {
			out.WriteString(" keeps")
		}
		fmt.Fprintf(out, " jobs %v launched %v floor %d\n", w.Jobs, w.Launched, w.LaunchedFloor)
		fmt.Fprintf(out, "  ranks %s\n", ranks(w.Ranks))
		fmt.Fprintf(out, "  exits %s (%d handed over)\n", exits(w.Exits), w.Handed)
	}
	for _, w := range rd.Writes {
		fmt.Fprintf(out, "write link %d: exit %s\n", w.Link, exit(w.Exit))
	}
	for _, x := range rd.Forget {
		fmt.Fprintf(out, "forget %d/%d/%d\n", x.Job, x.Rank, x.PID)
	}
	if rd.LinkChanged {
		out.WriteString("link changed\n")
	}
}

func status(m *agentctl.Machine) string {
	s := m.Status()
	var out strings.Builder
	fmt.Fprintf(&out, "link %d (welcomes %d)\n", s.Link, s.Welcomes)
	fmt.Fprintf(&out, "unreported %s\n", ranks(s.Unreported))
	fmt.Fprintf(&out, "pending %s\n", exits(s.Pending))
	fmt.Fprintf(&out, "delivered %s\n", exits(s.Delivered))
	for l := uint64(1); l <= s.Welcomes; l++ {
		if q, ok := s.Queued[l]; ok {
			fmt.Fprintf(&out, "queued on link %d: %s\n", l, exits(q))
		}
	}
	return out.String()
}

func ranks(rs []agentctl.Rank) string {
	var f []string
	for _, r := range rs {
		s := fmt.Sprintf("%d/%d/%d", r.Job, r.Rank, r.PID)
		if r.Stopped {
			s += "/stopped"
		}
		f = append(f, s)
	}
	return "[" + strings.Join(f, " ") + "]"
}

func exit(x agentctl.Exit) string { return fmt.Sprintf("%d/%d/%d %v", x.Job, x.Rank, x.PID, x.Report) }

func exits(xs []agentctl.Exit) string {
	var f []string
	for _, x := range xs {
		f = append(f, exit(x))
	}
	return "[" + strings.Join(f, ", ") + "]"
}

func rankOf(t *testing.T, v string) agentctl.Rank {
	f := strings.Split(v, "/")
	if len(f) < 3 {
		t.Fatalf("rank %q: want job/rank/pid[/stopped]", v)
	}
	return agentctl.Rank{Job: int64(atoi(t, f[0])), Rank: atoi(t, f[1]), PID: atoi(t, f[2]), Stopped: len(f) > 3}
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	return atoi(t, s)
}

func listArg(d *datadriven.TestData, key string) []string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return a.Vals
		}
	}
	return nil
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: not a number", s)
	}
	return n
}
