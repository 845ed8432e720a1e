package bcs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the slice-planning scripts under testdata/. Directives:
//
//	add node=n1 job=1 bytes=100 [n=3]   local ranks hand over n messages (their values: "m<N>")
//	mark                                a strobe cuts a slice: prints its mark
//	take upto=M [hmax=B]                the slice cut at M is planned: prints what it sends
//	drop job=1                          the job is removed
//	has job=1                           whether a message of the job waits
//	flush                               leaving buffered mode: everything, in order
//	leave [pending] [queued] [timedout] [overdue] [force]
//	                                    whether a node that finished a job leaves it
//	job id=1 hosts=(a,b,c) [left=(a)]   a job of the exchange (again: replaced)
//	heard self=a [known=(…)] [reported=(…)] [ready=(1,…)]
//	                                    what node self heard of a slice: prints each
//	                                    job's root and whether all its nodes reported,
//	                                    and whether the slice is exchanged
//	answer job=1 self=a                 the root answers the slice: prints each Ready;
//	  <from> <node> <job> <msgs> <bytes>  input: the flows announced, by sender (self's own too)
//	redirect from=b self=a mine=(1,…)   a late heartbeat's flows: prints each Ready;
//	  <node> <job> <msgs> <bytes>         input: its flows (mine: the jobs self announces)
//
// Regenerate with `go test ./comm/relay/bcs -run TestScripts -rewrite` and
// review the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var o Outbox[string]
		var jobs []Job
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "add":
				for range intArg(t, d, "n", 1) {
					o.Add(strArg(t, d, "node"), int64(intArg(t, d, "job", 0)), int64(intArg(t, d, "bytes", 0)), fmt.Sprintf("m%d", o.Mark()))
				}
				return fmt.Sprintf("%d waiting\n", o.Len())
			case "mark":
				return fmt.Sprintf("%d\n", o.Mark())
			case "take":
				hmax := int64(intArg(t, d, "hmax", 0))
				return planText(o.Take(uint64(intArg(t, d, "upto", 0)), hmax))
			case "drop":
				o.DropJob(int64(intArg(t, d, "job", 0)))
				return fmt.Sprintf("%d waiting\n", o.Len())
			case "has":
				return fmt.Sprintf("%v\n", o.HasJob(int64(intArg(t, d, "job", 0))))
			case "flush":
				return msgsText(o.TakeAll()) + fmt.Sprintf("%d waiting\n", o.Len())
			case "job":
				j := Job{ID: int64(intArg(t, d, "id", 0)), Hosts: listArg(d, "hosts"), Left: setArg(d, "left")}
				jobs = slices.DeleteFunc(jobs, func(o Job) bool { return o.ID == j.ID })
				jobs = append(jobs, j)
				return fmt.Sprintf("job %d root %q\n", j.ID, j.Root())
			case "heard":
				known, reported, ready := setArg(d, "known"), setArg(d, "reported"), setArg(d, "ready")
				h := Heard{Self: strArg(t, d, "self"), Known: func(n string) bool { return known[n] },
					Reported: func(n string) bool { return reported[n] },
					Ready:    func(job int64) bool { return ready[strconv.FormatInt(job, 10)] }}
				var b strings.Builder
				for _, j := range jobs {
					fmt.Fprintf(&b, "job %d: root %q, all reported %v\n", j.ID, j.Root(), AllReported(j, h))
				}
				fmt.Fprintf(&b, "exchanged %v\n", Exchanged(jobs, h))
				return b.String()
			case "answer":
				id := int64(intArg(t, d, "job", 0))
				i := slices.IndexFunc(jobs, func(j Job) bool { return j.ID == id })
				if i < 0 {
					t.Fatalf("%s: no job %d", d.Pos, id)
				}
				self := strArg(t, d, "self")
				var own []Flow
				heard := map[string][]Flow{}
				for _, l := range inputLines(d) {
					from, f := l[0], flowOf(t, d, l[1:])
					if from == self {
						own = append(own, f)
					} else {
						heard[from] = append(heard[from], f)
					}
				}
				return readyText(Answer(jobs[i], self, own, heard))
			case "redirect":
				mine := setArg(d, "mine")
				var flows []Flow
				for _, l := range inputLines(d) {
					flows = append(flows, flowOf(t, d, l))
				}
				return readyText(Redirect(flows, strArg(t, d, "from"), strArg(t, d, "self"),
					func(f Flow) bool { return mine[strconv.FormatInt(f.Job, 10)] }))
			case "leave":
				leave, overdue := Leave(Finished{Pending: d.HasArg("pending"), Queued: d.HasArg("queued"), TimedOut: d.HasArg("timedout"),
					Overdue: d.HasArg("overdue")}, d.HasArg("force"))
				return fmt.Sprintf("leave %v overdue %v\n", leave, overdue)
			}
			t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

func planText(p Plan[string]) string {
	var b strings.Builder
	b.WriteString(msgsText(p.Msgs))
	for _, f := range p.Flows {
		fmt.Fprintf(&b, "flow %s job %d: %d msgs %d B\n", f.Node, f.Job, f.Msgs, f.Bytes)
	}
	fmt.Fprintf(&b, "%d B, %d waiting", p.Bytes, p.Waiting)
	if p.Deferred {
		b.WriteString(", deferred")
	}
	b.WriteString("\n")
	return b.String()
}

func msgsText(ms []Msg[string]) string {
	if len(ms) == 0 {
		return "nothing\n"
	}
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s→%s/%d:%d", m.Value, m.Node, m.Job, m.Bytes))
	}
	return strings.Join(parts, " ") + "\n"
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	t.Helper()
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return v
}

func listArg(d *datadriven.TestData, key string) []string {
	a, ok := d.Arg(key)
	if !ok {
		return nil
	}
	return slices.Clone(a.Vals)
}

func setArg(d *datadriven.TestData, key string) map[string]bool {
	set := map[string]bool{}
	for _, v := range listArg(d, key) {
		set[v] = true
	}
	return set
}

func strArg(t *testing.T, d *datadriven.TestData, key string) string {
	t.Helper()
	var s string
	d.ScanArgs(t, key, &s)
	return s
}

func inputLines(d *datadriven.TestData) [][]string {
	var ls [][]string
	for _, l := range strings.Split(d.Input, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			ls = append(ls, f)
		}
	}
	return ls
}

// flowOf reads "node job msgs bytes".
func flowOf(t *testing.T, d *datadriven.TestData, f []string) Flow {
	t.Helper()
	if len(f) != 4 {
		t.Fatalf("%s: flow %q: want node job msgs bytes", d.Pos, f)
	}
	var n [3]int64
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: flow %q: %v", d.Pos, f, err)
		}
		n[i] = v
	}
	return Flow{Node: f[0], Job: n[0], Msgs: int(n[1]), Bytes: n[2]}
}

func readyText(rs []Ready) string {
	if len(rs) == 0 {
		return "nothing\n"
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "ready → %s job %d: %d msgs %d B\n", r.Node, r.Job, r.Msgs, r.Bytes)
	}
	return b.String()
}
