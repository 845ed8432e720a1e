package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAgent answers the API calls the client makes, counting submissions.
type fakeAgent struct {
	srv     *httptest.Server
	submits atomic.Int64
	nodes   []NodeInfo
	// unavailable answers 503 (with Retry-After when retryLater) this many
	// times before answering.
	unavailable atomic.Int64
	retryLater  bool
	// badGateway answers 502 (a forwarding agent whose leader died) this
	// many times before answering.
	badGateway atomic.Int64
	keys       chan string // the submit keys received, when not nil
}

func newFakeAgent(t *testing.T) *fakeAgent {
	f := &fakeAgent{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		var spec JobSpec
		json.NewDecoder(r.Body).Decode(&spec)
		if f.keys != nil {
			f.keys <- spec.SubmitKey
		}
		if f.badGateway.Add(-1) >= 0 {
			WriteError(w, http.StatusBadGateway, "controller at 127.0.0.1:1 unreachable: connection reset")
			return
		}
		if f.unavailable.Add(-1) >= 0 {
			if f.retryLater {
				w.Header().Set("Retry-After", "1")
			}
			WriteError(w, http.StatusServiceUnavailable, "no controller in the cluster yet")
			return
		}
		WriteJSON(w, http.StatusCreated, Submitted{ID: f.submits.Add(1)})
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, []Job{})
	})
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, NodesReport{Nodes: f.nodes})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAgent) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestClientTriesTheOtherAgentsWhenOneDoesNotAnswer(t *testing.T) {
	live := newFakeAgent(t)
	dead := deadAddr(t)
	c := NewClient(dead, live.addr())
	id, err := c.Submit(context.Background(), JobSpec{Processors: 1})
	if err != nil || id != 1 {
		t.Fatalf("submit through a dead agent then a live one: id %d, %v", id, err)
	}
	if c.Addr() != live.addr() {
		t.Fatalf("the client prefers %s after %s answered", c.Addr(), live.addr())
	}
	// Every agent dead: the error names the first and counts the others.
	c = NewClient(dead, deadAddr(t))
	_, err = c.Jobs(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the cluster at "+dead) || !strings.Contains(err.Error(), "nor did 1 other agents answer") {
		t.Fatalf("all agents dead: %v", err)
	}
}

func TestClientLearnsTheClusterFromTheNodeList(t *testing.T) {
	first, second := newFakeAgent(t), newFakeAgent(t)
	first.nodes = []NodeInfo{
		{Name: "a0", State: "up", APIAddr: first.addr()},
		{Name: "a1", State: "up", APIAddr: second.addr()},
		{Name: "a2", State: "down", APIAddr: "127.0.0.1:1"},
	}
	c := NewClient(first.addr())
	if _, err := c.Jobs(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	got := c.Addrs()
	if len(got) != 2 || got[0] != first.addr() || got[1] != second.addr() {
		t.Fatalf("known agents %v, want the two that are up", got)
	}
	first.srv.Close()
	if _, err := c.Submit(context.Background(), JobSpec{Processors: 1}); err != nil {
		t.Fatalf("submit after the first agent died: %v", err)
	}
	if second.submits.Load() != 1 {
		t.Fatalf("the second agent took %d submissions", second.submits.Load())
	}
}

// A submission an agent received but did not answer may have been taken:
// the client sends it again, to another agent, with the same submit key,
// which the controller takes at most once (node/ctl's submitkey script).
func TestClientResendsASubmissionAnAgentMayHaveTakenWithItsKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	silentKeys := make(chan string, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(conn)) // take the request, answer nothing
			if err == nil {
				var spec JobSpec
				json.NewDecoder(req.Body).Decode(&spec)
				silentKeys <- spec.SubmitKey
			}
			conn.Close()
		}
	}()
	other := newFakeAgent(t)
	other.keys = make(chan string, 16)
	c := NewClient(ln.Addr().String(), other.addr())
	id, err := c.Submit(context.Background(), JobSpec{Processors: 1})
	if err != nil || id != 1 {
		t.Fatalf("submission after a silent agent: id %d, %v", id, err)
	}
	first, again := <-silentKeys, <-other.keys
	if first == "" || first != again {
		t.Fatalf("submit keys %q then %q: want the same, non-empty", first, again)
	}
	// A write without a key (cancel) answered 502 is not sent again.
	var cancels atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		cancels.Add(1)
		WriteError(w, http.StatusBadGateway, "controller unreachable")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c = NewClient(strings.TrimPrefix(srv.URL, "http://"))
	c.RetryFor = 2 * time.Second
	if err := c.Cancel(context.Background(), 1); err == nil {
		t.Fatal("a cancel answered 502 succeeded")
	}
	if n := cancels.Load(); n != 1 {
		t.Fatalf("a cancel answered 502 was sent %d times, want once", n)
	}
}

// A forwarding agent's 502 (its leader died with the request) is repeated,
// with the same key, until the cluster answers.
func TestClientRepeatsASubmissionAnswered502(t *testing.T) {
	f := newFakeAgent(t)
	f.badGateway.Store(2)
	f.keys = make(chan string, 16)
	c := NewClient(f.addr())
	id, err := c.Submit(context.Background(), JobSpec{Processors: 1})
	if err != nil || id != 1 {
		t.Fatalf("submit after two 502s: id %d, %v", id, err)
	}
	k1, k2, k3 := <-f.keys, <-f.keys, <-f.keys
	if k1 == "" || k1 != k2 || k2 != k3 {
		t.Fatalf("keys %q %q %q: want one key, repeated", k1, k2, k3)
	}
	// Without time to repeat, the 502 is the answer.
	f.badGateway.Store(1)
	c.RetryFor = 0
	if _, err := c.Submit(context.Background(), JobSpec{Processors: 1}); err == nil || !strings.Contains(err.Error(), "502") && !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("a 502 with no time to repeat: %v", err)
	}
}

func TestClientRetriesAnswersThatSayRetryLater(t *testing.T) {
	f := newFakeAgent(t)
	f.retryLater = true
	f.unavailable.Store(3)
	c := NewClient(f.addr())
	start := time.Now()
	id, err := c.Submit(context.Background(), JobSpec{Processors: 1})
	if err != nil || id != 1 {
		t.Fatalf("submit after three 503s with Retry-After: %d, %v", id, err)
	}
	if d := time.Since(start); d < 3*200*time.Millisecond {
		t.Fatalf("three retries took %v: the client did not wait between them", d)
	}
	// Without Retry-After a 503 is an answer: the request may have been
	// acted on, so it is not repeated.
	f.retryLater = false
	f.unavailable.Store(1)
	_, err = c.Submit(context.Background(), JobSpec{Processors: 1})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
		t.Fatalf("a 503 without Retry-After: %v", err)
	}
	if n := f.submits.Load(); n != 1 {
		t.Fatalf("%d submissions taken, want 1", n)
	}
}

// Statistics of one agent are never read from another.
func TestClientLocalStatsStayWithTheirAgent(t *testing.T) {
	live := newFakeAgent(t)
	dead := deadAddr(t)
	c := NewClient(dead, live.addr())
	if _, err := c.LocalStats(context.Background(), 0); err == nil || !strings.Contains(err.Error(), dead) {
		t.Fatalf("local stats of a dead agent: %v", err)
	}
}
