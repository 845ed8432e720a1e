package jobtable

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/telemetry"
)

func TestQueueFormat(t *testing.T) {
	jobs := []api.Job{
		{ID: 7, Spec: api.JobSpec{Name: "solver", User: "alice", Processors: 4, TimeLimit: api.Duration{D: 90 * time.Minute}},
			State: api.Running, Nodes: []string{"a0", "a0", "a1", "a1"}, Elapsed: api.Duration{D: 123 * time.Second}},
		{ID: 12, Spec: api.JobSpec{Bench: "50ms,25ms,news,NB", Processors: 2, TimeLimit: api.Duration{D: 26 * time.Hour}},
			State: api.Pending, Reason: "no room in any row"},
	}
	for _, tc := range []struct {
		format   string
		noHeader bool
		want     string
	}{
		{"%i %j %u %t %T %M %l %D %C %R", false, "JOBID NAME USER ST STATE TIME TIME_LIMIT NODES CPUS NODELIST(REASON)\n" +
			"7 solver alice R RUNNING 2:03 1:30:00 2 4 a0,a1\n" +
			"12 bench:50ms,25ms,news,NB - PD PENDING 0:00 1-02:00:00 - 2 (no room in any row)\n"},
		{"%.5i|%-4j|%P|%%", true, "    7|solv|-|%\n   12|benc|-|%\n"},
		{"%N %r", true, "a0,a1 -\n no room in any row\n"},
	} {
		cols, err := ParseFormat(tc.format)
		if err != nil {
			t.Fatalf("%q: %v", tc.format, err)
		}
		var b strings.Builder
		WriteFormat(&b, cols, jobs, tc.noHeader)
		if b.String() != tc.want {
			t.Errorf("%q:\n%s\nwant:\n%s", tc.format, b.String(), tc.want)
		}
	}
	for _, bad := range []string{"%x", "%.", "%5", "%99999i"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var b strings.Builder
	Queue(&b, jobs, false, false)
	if lines := strings.Split(b.String(), "\n"); !strings.HasPrefix(lines[0], "JOBID  NAME") || !strings.Contains(lines[0], "USER") ||
		!strings.Contains(lines[1], "alice") || !strings.Contains(lines[1], "2:03") || !strings.Contains(lines[2], "bench:50ms,25ms…") {
		t.Errorf("default table:\n%s", b.String())
	}
}

func TestQueueStates(t *testing.T) {
	got, err := ParseStates("pd,RUNNING,canceled")
	if err != nil || len(got) != 3 || !got[api.Pending] || !got[api.Running] || !got[api.Cancelled] {
		t.Errorf("%v %v", got, err)
	}
	if all, err := ParseStates("all"); err != nil || len(all) != 6 {
		t.Errorf("all: %v %v", all, err)
	}
	if _, err := ParseStates("R,XX"); err == nil || !strings.Contains(err.Error(), `state "XX"`) {
		t.Errorf("bad state: %v", err)
	}
}

func TestRoundSig(t *testing.T) {
	for d, want := range map[time.Duration]string{
		123456 * time.Nanosecond:      "123µs",
		1234567 * time.Nanosecond:     "1.23ms",
		40117481189 * time.Nanosecond: "40.1s",
		999 * time.Nanosecond:         "999ns",
		2*time.Minute + 3*time.Second: "2m3s",
	} {
		if got := RoundSig(d).String(); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}

func TestNodesStatsShowsBackfill(t *testing.T) {
	var out strings.Builder
	Nodes(&out, api.NodesReport{Cluster: &api.ClusterStats{Mode: sharing.Space, MPL: 1, Policy: gang.PriorityBF,
		Reservations: "inf", ReservationMode: gang.Fixed, Weights: &gang.Weights{Wait: 1, Expansion: 5}, Online: 4}}, true)
	if want := "space mode, MPL 1; policy priority-bf (reservations inf, fixed, weights ww=1,wx=5,wp=0,wm=0); 4 processors in service"; !strings.Contains(out.String(), want) {
		t.Errorf("nodes --stats:\n%s\nwant the line %q", out.String(), want)
	}
}

func TestQueueLongAndNodesShowContainment(t *testing.T) {
	var q strings.Builder
	Queue(&q, []api.Job{
		{ID: 7, Spec: api.JobSpec{Name: "hog"}, State: api.Failed, Reason: "rank 0 on n0 out of memory",
			Usage: &api.JobUsage{CPUTime: api.Duration{D: 1500 * time.Millisecond}, PeakMemory: 48 << 20, Processes: 3}},
		{ID: 8, Spec: api.JobSpec{Name: "plain"}, State: api.Completed},
	}, false, true)
	for _, want := range []string{"CPU", "MAXMEM", "PROCS", "1.5s", "48 MiB", "(rank 0 on n0 out of memory)"} {
		if !strings.Contains(q.String(), want) {
			t.Errorf("queue --long lacks %q:\n%s", want, q.String())
		}
	}
	var n strings.Builder
	Nodes(&n, api.NodesReport{Nodes: []api.NodeInfo{{Name: "n0", State: "up", CPUs: 2, Memory: 3 << 30,
		Stats: &api.NodeStats{Cgroups: "v1", Suspend: "freezer", Relay: api.RelayStats{Jobs: []telemetry.RelayJobStats{
			{Job: 7, Sent: 3, SentBytes: 3 << 20, ChannelBytes: 1 << 20, Delivered: 2, DeliveredBytes: 2048, Collectives: 5},
			{Job: 9, Ended: true, Sent: 1, SentBytes: 8},
			{Job: 10}, // nothing sent: not shown
		}}}}}}, true)
	for _, want := range []string{"MEMORY", "3.0 GiB", "CGROUPS", "v1", "freezer", "SENT BYTES", "ON CHANNELS", "n0     7          3     3.0 MiB     1.0 MiB      2          2.0 KiB          5",
		"9 (ended)  1     8 B"} {
		if !strings.Contains(n.String(), want) {
			t.Errorf("nodes --stats lacks %q:\n%s", want, n.String())
		}
	}
}

// -j and -t select jobs, and ask for finished jobs when they may show one.
func TestFilter(t *testing.T) {
	ids, err := ParseJobList("3, 4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseJobList("3,x"); err == nil {
		t.Error(`ParseJobList("3,x"): no error`)
	}
	running, err := ParseStates("R")
	if err != nil {
		t.Fatal(err)
	}
	done, _ := ParseStates("CD")
	for _, tc := range []struct {
		f        Filter
		all      bool
		finished bool
		kept     string
	}{
		{Filter{}, false, false, "2 3 4"},
		{Filter{}, true, true, "2 3 4"},
		{Filter{IDs: ids}, false, true, "3 4"},
		{Filter{States: running}, false, false, "2 4"},
		{Filter{States: done}, false, true, "3"},
		{Filter{IDs: ids, States: running}, false, true, "4"},
	} {
		var kept []string
		for _, j := range []api.Job{{ID: 2, State: api.Running}, {ID: 3, State: api.Completed}, {ID: 4, State: api.Running}} {
			if tc.f.Keep(j) {
				kept = append(kept, strconv.FormatInt(j.ID, 10))
			}
		}
		if got := strings.Join(kept, " "); got != tc.kept || tc.f.Finished(tc.all) != tc.finished {
			t.Errorf("%+v (all %v): kept %q, finished %v; want %q, %v", tc.f, tc.all, got, tc.f.Finished(tc.all), tc.kept, tc.finished)
		}
	}
}

// A query's texts are parsed into a listing, every bad one reported by its
// field; the listing filters and prints as its format says.
func TestQueryParse(t *testing.T) {
	_, err := Query{Format: "%q", Jobs: "3,x", States: "XX"}.Parse()
	var fields []string
	for _, e := range fielderr.All(err) {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, " "); got != "Format Jobs States" || !strings.Contains(err.Error(), `Format "%q": %q: unknown field`) {
		t.Errorf("bad query: fields %q, error %v", got, err)
	}
	l, err := Query{Format: "%i %t", Jobs: "3,4", NoHeader: true}.Parse()
	if err != nil || !l.Finished() {
		t.Fatalf("listing: %v, finished %v", err, l.Finished())
	}
	var out strings.Builder
	l.Write(&out, []api.Job{{ID: 2, State: api.Running}, {ID: 3, State: api.Completed}, {ID: 4, State: api.Pending}})
	if out.String() != "3 CD\n4 PD\n" {
		t.Errorf("listing wrote %q", out.String())
	}
}

// Show prints every field scontrol show job prints for a job, with the
// reason, times, limit and use, nodes, command, directory and exit code.
func TestShowJob(t *testing.T) {
	submit := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	start, end := submit.Add(2*time.Second), submit.Add(32*time.Second)
	j := api.Job{ID: 12, State: api.Failed, Reason: "rank 1 on a1 exited with status 3", Submit: submit, Start: &start, End: &end,
		Nodes: []string{"a0", "a1", "a1"}, Elapsed: api.Duration{D: 30 * time.Second},
		Ranks: []api.RankInfo{{Rank: 0, Node: "a0", Exited: true}, {Rank: 1, Node: "a1", Exited: true, Code: 3}, {Rank: 2, Node: "a1", Signal: "killed"}},
		Spec: api.JobSpec{Name: "ring", User: "ann", Owner: &api.Owner{UID: 1234, GID: 999999, User: "ann"}, Command: []string{"./ring", "-v"},
			Processors: 3, TimeLimit: api.Duration{D: time.Minute}, MPI: api.MPIPMI1, Dir: "/home/ann/ring"}}
	var b strings.Builder
	Show(&b, j)
	want := `JobId=12 JobName=ring
   UserId=ann(1234) GroupId=999999(999999)
   JobState=FAILED Reason=rank 1 on a1 exited with status 3 ExitCode=3:killed
   RunTime=00:00:30 TimeLimit=00:01:00 TimeUsed=50% OverTimeLimit=kill
   SubmitTime=2026-01-02T03:04:05 StartTime=2026-01-02T03:04:07 EndTime=2026-01-02T03:04:37
   NumNodes=2 NumTasks=3 NodeList=a0,a1
   MinMemoryCPU=0 MPI=pmi1
   Command=./ring -v
   WorkDir=/home/ann/ring
`
	if b.String() != want {
		t.Errorf("Show:\n%s\nwant:\n%s", b.String(), want)
	}
	// The controller's name for the group, which this host may not know.
	b.Reset()
	j.Spec.Owner.Group = "physics"
	Show(&b, j)
	if !strings.Contains(b.String(), "UserId=ann(1234) GroupId=physics(999999)\n") {
		t.Errorf("Show with the owner's group name:\n%s", b.String())
	}
	b.Reset()
	Show(&b, api.Job{ID: 13, State: api.Pending, Reason: "waits for 4 processors", Submit: submit,
		Spec: api.JobSpec{Bench: "10ms,5ms,news,NB", Processors: 4, TimeLimit: api.Duration{D: time.Hour}}})
	for _, want := range []string{"JobState=PENDING Reason=waits for 4 processors ExitCode=0:0", "StartTime=Unknown EndTime=Unknown",
		"NumNodes=- NumTasks=4 NodeList=(null)", "TimeUsed=0%", "MPI=comm (benchmark 10ms,5ms,news,NB)", "UserId=(null)(unknown)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("pending job: no %q in\n%s", want, b.String())
		}
	}
}
