package pmi

import (
	"strings"
	"testing"
)

func newTestJob(local ...int) *Job {
	return NewJob(JobConfig{KVSName: "kvs_1", Size: 4, Local: local, Preset: map[string]string{"PMI_process_mapping": "(vector,(0,2,2))"}})
}

func reply(t *testing.T, j *Job, rank int, line string) string {
	t.Helper()
	out := j.Handle(rank, []byte(line))
	if out.Err != nil {
		t.Fatalf("%s: %v", line, out.Err)
	}
	return string(out.Reply)
}

func TestReplies(t *testing.T) {
	j := newTestJob(0, 1)
	for _, c := range []struct{ in, want string }{
		{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"},
		{"cmd=init pmi_version=2 pmi_subversion=0", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n"},
		{"cmd=get_maxes", "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n"},
		{"cmd=get_appnum", "cmd=appnum rc=0 appnum=0\n"},
		{"cmd=get_my_kvsname", "cmd=my_kvsname rc=0 kvsname=kvs_1\n"},
		{"cmd=get_universe_size", "cmd=universe_size rc=0 size=4\n"},
		{"cmd=put kvsname=kvs_1 key=a value=1", "cmd=put_result rc=0 msg=success\n"},
		{"cmd=put kvsname=kvs_1 key=a value=2", "cmd=put_result rc=-1 msg=duplicate_key\n"},
		{"cmd=put kvsname=kvs_1 key=" + strings.Repeat("k", MaxKey+1) + " value=2", "cmd=put_result rc=-1 msg=key_too_long\n"},
		{"cmd=put kvsname=other key=b value=2", "cmd=put_result rc=-1 msg=unknown_kvsname\n"},
		{"cmd=get kvsname=kvs_1 key=PMI_process_mapping", "cmd=get_result rc=0 msg=success value=(vector,(0,2,2))\n"},
		{"cmd=get kvsname=kvs_1 key=missing", "cmd=get_result rc=-1 msg=key_not_found\n"},
		{"cmd=publish_name service=s port=p", "cmd=publish_result rc=-1 info=unsupported msg=cosched_serves_no_name_service\n"},
		{"cmd=lookup_name service=s", "cmd=lookup_result rc=-1 info=unsupported msg=cosched_serves_no_name_service\n"},
		{"cmd=unpublish_name service=s", "cmd=unpublish_result rc=-1 info=unsupported msg=cosched_serves_no_name_service\n"},
		{"cmd=finalize", "cmd=finalize_ack rc=0\n"},
	} {
		if got := reply(t, j, 0, c.in); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// A barrier ends when every local rank and then every node is in it; puts
// of other nodes become visible only then.
func TestBarrierAcrossNodes(t *testing.T) {
	nodes := []string{"a", "a", "b", "b"}
	ja, jb := newTestJob(0, 1), newTestJob(2, 3)
	g := NewGather(nodes)
	reply(t, ja, 0, "cmd=put kvsname=kvs_1 key=addr0 value=x0")
	reply(t, jb, 3, "cmd=put kvsname=kvs_1 key=addr3 value=x3")
	if out := ja.Handle(0, []byte("cmd=barrier_in")); out.Barrier != nil || out.Reply != nil {
		t.Fatalf("barrier ended with one rank of two in: %+v", out)
	}
	outA := ja.Handle(1, []byte("cmd=barrier_in"))
	if outA.Barrier == nil || outA.Barrier.Puts["addr0"] != "x0" {
		t.Fatalf("node a's barrier: %+v", outA)
	}
	if done, _, err := g.In("a", *outA.Barrier); done != nil || err != nil {
		t.Fatalf("gather ended with one node of two: %v %v", done, err)
	}
	if done, _, err := g.In("a", *outA.Barrier); done != nil || err != nil {
		t.Errorf("a node's part sent again (after a reconnect): %v %v, want ignored", done, err)
	}
	if _, _, err := g.In("a", Barrier{Epoch: 5}); err == nil {
		t.Error("a part for another barrier was accepted")
	}
	jb.Handle(2, []byte("cmd=barrier_in"))
	outB := jb.Handle(3, []byte("cmd=barrier_in"))
	done, to, err := g.In("b", *outB.Barrier)
	if err != nil || done == nil || len(to) != 2 {
		t.Fatalf("gather: %v %v %v", done, to, err)
	}
	// b lost the end with its connection and sends its part again: it
	// alone gets the same end.
	if again, to, err := g.In("b", *outB.Barrier); err != nil || again != done || len(to) != 1 || to[0] != "b" {
		t.Errorf("part of the ended barrier again: %v %v %v", again, to, err)
	}
	if got := reply(t, ja, 0, "cmd=get kvsname=kvs_1 key=addr3"); !strings.Contains(got, "rc=-1") {
		t.Errorf("node b's put visible before the barrier ended: %q", got)
	}
	replies, err := ja.BarrierDone(*done)
	if err != nil || len(replies) != 2 || string(replies[0].Line) != "cmd=barrier_out rc=0\n" {
		t.Fatalf("barrier done: %v %+v", err, replies)
	}
	if got := reply(t, ja, 0, "cmd=get kvsname=kvs_1 key=addr3"); got != "cmd=get_result rc=0 msg=success value=x3\n" {
		t.Errorf("after the barrier: %q", got)
	}
	// The next barrier is a new one.
	if out := ja.Handle(0, []byte("cmd=barrier_in")); out.Err != nil {
		t.Errorf("second barrier: %v", out.Err)
	}
}

func TestProtocolViolationsEndTheJob(t *testing.T) {
	for _, line := range []string{
		"", "put kvsname=kvs_1", "cmd=", "cmd=put =x", "cmd=put novalue", "cmd=get key=a key=b",
		"cmd=spawn nprocs=2", strings.Repeat("x", MaxLine), "cmd=get " + strings.Repeat("a=b ", maxFields),
	} {
		if out := newTestJob(0).Handle(0, []byte(line)); out.Err == nil {
			t.Errorf("%q: accepted (%q)", line, out.Reply)
		}
	}
	j := newTestJob(0, 1)
	j.Handle(0, []byte("cmd=barrier_in"))
	if out := j.Handle(0, []byte("cmd=barrier_in")); out.Err == nil || !strings.Contains(out.Err.Error(), "twice") {
		t.Errorf("barrier entered twice: %v", out.Err)
	}
	if out := j.Handle(5, []byte("cmd=get_maxes")); out.Err == nil {
		t.Error("a rank not served here was answered")
	}
}

func TestKeyValueSpaceIsBounded(t *testing.T) {
	j := newTestJob(0)
	v := strings.Repeat("v", MaxValue)
	full := false
	for i := 0; i < MaxBarrierBytes/MaxValue+2; i++ {
		if got := reply(t, j, 0, "cmd=put kvsname=kvs_1 key=k"+itoa(i)+" value="+v); strings.Contains(got, "key_value_space_full") {
			full = true
			break
		}
	}
	if !full {
		t.Errorf("puts beyond %d bytes between barriers were accepted", MaxBarrierBytes)
	}
}

func TestProcessMapping(t *testing.T) {
	for _, c := range []struct {
		nodes []string
		want  string
	}{
		{[]string{"a", "a", "b", "b"}, "(vector,(0,2,2))"},
		{[]string{"a", "b", "c"}, "(vector,(0,3,1))"},
		{[]string{"a", "a", "a", "b"}, "(vector,(0,1,3),(1,1,1))"},
		{[]string{"a", "b", "a", "b"}, "(vector,(0,2,1),(0,2,1))"},
	} {
		if got := ProcessMapping(c.nodes); got != c.want {
			t.Errorf("%v: %s, want %s", c.nodes, got, c.want)
		}
	}
	local, per := LocalRanks([]string{"a", "b", "a"})
	if local[2] != 1 || per[2] != 2 || per[1] != 1 {
		t.Errorf("local ranks %v per node %v", local, per)
	}
}

// FuzzHandle: no line makes the protocol panic, a reply is always one
// line, and a failure is an error, never a hang.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=put kvsname=kvs_1 key=a value=b",
		"cmd=get kvsname=kvs_1 key=a", "cmd=barrier_in", "cmd=abort exitcode=3", "cmd==", "cmd=x a==b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		j := newTestJob(0, 1)
		for range 2 {
			out := j.Handle(0, line)
			if out.Reply != nil && (len(out.Reply) > MaxLine+MaxValue || strings.Count(string(out.Reply), "\n") != 1) {
				t.Fatalf("reply %q", out.Reply)
			}
			if c, err := Parse(line); err == nil {
				if _, err := Parse(Encode(c.Name)[:len(Encode(c.Name))-1]); err != nil && len(c.Name) < MaxLine-5 {
					t.Fatalf("Encode(%q) does not parse: %v", c.Name, err)
				}
			}
		}
	})
}
