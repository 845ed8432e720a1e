package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/node/journal"
)

// The records a controller journals come back after a restart: compacted at
// the snapshot, followed by those committed after it.
func TestRecordLogSurvivesARestartCompacted(t *testing.T) {
	dir := t.TempDir()
	// The compaction keeps the last record of each key ("key=value").
	compact := func(recs [][]byte) ([][]byte, error) {
		last := map[string][]byte{}
		var order []string
		for _, r := range recs {
			var k, v string
			if _, err := fmt.Sscanf(string(r), "%1s=%s", &k, &v); err != nil {
				return nil, err
			}
			if _, ok := last[k]; !ok {
				order = append(order, k)
			}
			last[k] = r
		}
		out := make([][]byte, 0, len(order))
		for _, k := range order {
			out = append(out, last[k])
		}
		return out, nil
	}
	open := func(l *recordLog) *journal.Journal {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		j, err := journal.Open(ctx, journal.Config{Dir: dir, NodeID: "a0", Bind: "127.0.0.1:0", Bootstrap: true, FSM: l})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	l := &recordLog{compact: compact}
	j := open(l)
	put := func(recs ...string) {
		var b [][]byte
		for _, r := range recs {
			b = append(b, []byte(r))
		}
		if err := j.Append(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	put("a=1", "b=1")
	put("a=2")
	put("c=1", "b=2")
	if err := j.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	put("a=3")
	j.Close()

	l2 := &recordLog{compact: compact}
	j = open(l2)
	defer j.Close()
	got, _ := l2.Records()
	want := []string{"a=2", "b=2", "c=1", "a=3"}
	if len(got) != len(want) || !slices.EqualFunc(got, want, func(g []byte, w string) bool { return string(g) == w }) {
		t.Fatalf("records after restart %q, want %q", got, want)
	}
}
