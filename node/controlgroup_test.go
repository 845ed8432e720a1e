package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// Three controller-eligible agents form one group once each sees the three
// of them; a fourth that appears later is added by the leader; the leader's
// death leaves a group that still commits.
func TestControlGroupFormsFromGossipAndGrows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := t.TempDir()
	open := func(name string) *controlGroup {
		g, err := openControlGroup(ctx, controlGroupConfig{Name: name, Dir: filepath.Join(root, name), Bind: "127.0.0.1:0", Expect: 3, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	var gs []*controlGroup
	var eligible []Eligible
	for i := range 3 {
		g := open(fmt.Sprintf("a%d", i))
		gs = append(gs, g)
		eligible = append(eligible, Eligible{Name: g.cfg.Name, RaftAddr: g.RaftAddr()})
	}
	// Two of three known: no group yet.
	for _, g := range gs {
		if err := g.MembersChanged(ctx, eligible[:2]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, g := range gs {
		if g.j.Leader().ID != "" {
			t.Fatalf("%s sees leader %q before the group formed", g.cfg.Name, g.j.Leader().ID)
		}
	}
	for _, g := range gs {
		if err := g.MembersChanged(ctx, eligible); err != nil {
			t.Fatal(err)
		}
	}
	leader := func(gs []*controlGroup) *controlGroup {
		var l *controlGroup
		deadline := time.Now().Add(10 * time.Second)
		for l == nil && time.Now().Before(deadline) {
			for _, g := range gs {
				if g != nil && g.j.IsLeader() {
					l = g
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		if l == nil {
			t.Fatal("no leader")
		}
		return l
	}
	lead := leader(gs)
	if err := lead.j.Append(ctx, [][]byte{[]byte("r1")}); err != nil {
		t.Fatal(err)
	}

	// A fourth eligible agent: it does not bootstrap a group of its own,
	// and the leader adds it.
	late := open("a3")
	eligible = append(eligible, Eligible{Name: "a3", RaftAddr: late.RaftAddr()})
	if err := late.MembersChanged(ctx, eligible); err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if err := g.MembersChanged(ctx, eligible); err != nil {
			t.Fatal(err)
		}
	}
	servers, err := lead.j.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 4 || !servers[3].Voter || servers[3].ID != "a3" {
		t.Fatalf("servers after a3 appeared: %+v", servers)
	}
	waitRecords := func(g *controlGroup, n int) {
		deadline := time.Now().Add(10 * time.Second)
		for len(g.Records()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s has %d records, want %d", g.cfg.Name, len(g.Records()), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRecords(late, 1)

	// The leader dies: another of the four leads and commits.
	lead.Close()
	var rest []*controlGroup
	for _, g := range append(gs, late) {
		if g != lead {
			rest = append(rest, g)
		}
	}
	next := leader(rest)
	if err := next.j.Append(ctx, [][]byte{[]byte("r2")}); err != nil {
		t.Fatal(err)
	}
	for _, g := range rest {
		waitRecords(g, 2)
	}
}
