package node_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/telemetry"
	"github.com/cosched/cosched/ui"
)

// The web page authenticates as the API does: nothing without a
// credential (401), a login link once, a session cookie afterwards; a
// user sees every job's place but the details of their own jobs only, and
// changes nothing with the cookie alone (CSRF).
func TestWebUIAuthentication(t *testing.T) {
	key := newKey(t)
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.Gang, mpl: 2, slice: 50 * time.Millisecond, key: key})
	ctx := context.Background()
	addr := c.agents[1].APIAddr() // not the controller's: requests are forwarded
	base := "http://" + addr
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	mint := func(uid, gid uint32) *api.Client {
		tok, err := key.Mint(uid, gid, time.Now(), clusterkey.DefaultTTL, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tokenClient(addr, tok)
	}
	owner := mint(uid, gid)
	id, err := owner.Submit(ctx, api.JobSpec{Command: []string{"sh", "-c", "echo out-of-rank-$COSCHED_RANK; exec sleep 600"}, Processors: 2, TimeLimit: api.Duration{D: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Cancel(context.Background(), id)

	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, cookie string, hdr ...string) (int, string, http.Header) {
		t.Helper()
		method := http.MethodGet
		if m, p, ok := strings.Cut(path, " "); ok {
			method, path = m, p
		}
		req, _ := http.NewRequest(method, base+path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: ui.CookieName(addr), Value: cookie})
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	login := func(cl *api.Client) string {
		t.Helper()
		l, err := cl.UILogin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(l.URL, base+ui.LoginPath+"?token=") {
			t.Fatalf("login URL %q: want %s%s?token=…", l.URL, base, ui.LoginPath)
		}
		code, _, h := get(strings.TrimPrefix(l.URL, base), "")
		if code != http.StatusSeeOther || h.Get("Location") != "/ui/" {
			t.Fatalf("login: %d to %q, want 303 to /ui/", code, h.Get("Location"))
		}
		if code, _, _ := get(strings.TrimPrefix(l.URL, base), ""); code != http.StatusUnauthorized {
			t.Errorf("login link used twice: %d, want 401", code)
		}
		for _, ck := range (&http.Response{Header: h}).Cookies() {
			if ck.Name == ui.CookieName(addr) && ck.HttpOnly && ck.SameSite == http.SameSiteStrictMode {
				return ck.Value
			}
		}
		t.Fatalf("login set no HttpOnly, SameSite=Strict session cookie: %v", h["Set-Cookie"])
		return ""
	}

	for _, p := range []string{"/ui/", "/ui/events", "/ui/static/app.js", "/ui/me", "/ui/timeline"} {
		if code, _, _ := get(p, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a credential: %d, want 401", p, code)
		}
		if code, _, _ := get(p, "forged-session"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a forged session: %d, want 401", p, code)
		}
	}
	if code, body, _ := get(ui.LoginPath+"?token=nope", ""); code != http.StatusUnauthorized || !strings.Contains(body, "cosched ui --url") {
		t.Errorf("bad login token: %d %q, want 401 saying to run cosched ui --url", code, body)
	}

	other := login(mint(4242, 4242)) // not the owner, not an operator
	if code, body, h := get("/ui/", other); code != http.StatusOK || !strings.Contains(body, `data-testid="matrix"`) || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("page with a session: %d, CSP %q", code, h.Get("Content-Security-Policy"))
	}
	var me ui.Me
	if code, body, _ := get("/ui/me", other); code != http.StatusOK || json.Unmarshal([]byte(body), &me) != nil || me.UID != 4242 || me.Operator || me.Via != "session" {
		t.Errorf("/ui/me: %d %s", code, body)
	}
	path := fmt.Sprintf("/v1/jobs/%d", id)
	if code, body, _ := get(path, other); code != http.StatusForbidden {
		t.Errorf("another user's job details: %d %s, want 403", code, body)
	}
	if code, body, _ := get(path+"/output?rank=1", other); code != http.StatusForbidden {
		t.Errorf("another user's output: %d %s, want 403", code, body)
	}
	if code, body, _ := get(path+"/live", other); code != http.StatusForbidden {
		t.Errorf("another user's ranks now: %d %s, want 403", code, body)
	}
	if code, body, _ := get(fmt.Sprintf("/v1/local/jobs/%d/live", id), other); code != http.StatusForbidden {
		t.Errorf("another user reading an agent's part of a job: %d %s, want 403", code, body)
	}
	if code, body, _ := get(fmt.Sprintf("/v1/local/output/%d/1", id), other); code != http.StatusForbidden {
		t.Errorf("another user reading an agent's output file: %d %s, want 403", code, body)
	}
	if code, body, _ := get("DELETE "+path, other); code != http.StatusForbidden || !strings.Contains(body, ui.CSRFHeader) {
		t.Errorf("cancel with the cookie alone: %d %s, want 403 naming %s", code, body, ui.CSRFHeader)
	}
	if code, body, _ := get("DELETE "+path, other, ui.CSRFHeader, "1"); code != http.StatusForbidden || !strings.Contains(body, "belongs to") {
		t.Errorf("another user's cancel: %d %s, want 403", code, body)
	}
	if code, _, _ := get("POST /v1/ui/login", other, ui.CSRFHeader, "1"); code != http.StatusForbidden {
		t.Errorf("a session minting login links: %d, want 403", code)
	}

	// The stream shows the job's place to everyone, never its command.
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/events", nil)
	req.AddCookie(&http.Cookie{Name: ui.CookieName(addr), Value: other})
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(sctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var placed, sliced bool
	for !(placed && sliced) && sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: {\"jobs\"") {
			if strings.Contains(line, "out-of-rank") {
				t.Fatalf("state event shows the command to another user: %s", line)
			}
			var st ui.State
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st); err != nil {
				t.Fatal(err)
			}
			for _, j := range st.Jobs {
				placed = placed || (j.ID == id && j.State == api.Running && len(j.Columns) == 2)
			}
		}
		sliced = sliced || strings.HasPrefix(line, `data: {"seq":`)
	}
	if !placed || !sliced {
		t.Fatalf("event stream: job placed %v, slices %v (%v)", placed, sliced, sc.Err())
	}
	cancel()

	mine := login(owner)
	if code, body, _ := get(path, mine); code != http.StatusOK || !strings.Contains(body, "sleep") {
		t.Errorf("own job's details: %d %s", code, body)
	}
	// Each rank's output, wherever it runs (the leader fetches it from the
	// rank's node).
	for _, rank := range []int{0, 1} {
		eventually(t, 30*time.Second, func() error {
			want := fmt.Sprintf("out-of-rank-%d", rank)
			if code, body, _ := get(fmt.Sprintf("%s/output?rank=%d", path, rank), mine); code != http.StatusOK || !strings.Contains(body, want) {
				return fmt.Errorf("own output of rank %d: %d %q, want %s", rank, code, body, want)
			}
			return nil
		})
	}
	// Its ranks now, node by node: each rank once, on its node.
	var live api.JobLive
	if code, body, _ := get(path+"/live", mine); code != http.StatusOK || json.Unmarshal([]byte(body), &live) != nil || len(live.Nodes) != 2 {
		t.Errorf("own job's ranks now: %d %s", code, body)
	}
	for _, n := range live.Nodes {
		if n.Error != "" || len(n.Ranks) != 1 || n.Seq == 0 {
			t.Errorf("node %s's part of job %d: %+v", n.Node, id, n)
		}
		for _, r := range n.Ranks {
			if r.State != api.RankRunning && r.State != api.RankStopped {
				t.Errorf("node %s rank %d state %q, want running or stopped (gang)", n.Node, r.Rank, r.State)
			}
		}
	}
	// The timeline's records: the last N of each agent, N bounded.
	var rep api.NodesReport
	if code, body, _ := get("/v1/nodes?stats=1&records=3", mine); code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Nodes) != 2 {
		t.Errorf("nodes with 3 records each: %d %s", code, body)
	}
	for _, n := range rep.Nodes {
		if n.Stats == nil || len(n.Stats.Records) == 0 || len(n.Stats.Records) > 3 {
			t.Errorf("node %s's stats %+v: want 1 to 3 slice records", n.Name, n.Stats)
		}
	}
	if code, body, _ := get("/v1/nodes?stats=1&records=99999", mine); code != http.StatusBadRequest || !strings.Contains(body, "records=") {
		t.Errorf("too many records: %d %s, want 400 naming records=", code, body)
	}
	checkNodesSince(t, owner, func(path string) (int, string) { code, body, _ := get(path, mine); return code, body })
	if code, _, _ := get(path+"/output?rank=9", mine); code != http.StatusBadRequest {
		t.Errorf("output of a rank the job does not have: %d, want 400", code)
	}
	if code, body, _ := get("DELETE "+path, mine, ui.CSRFHeader, "1"); code != http.StatusOK {
		t.Errorf("own cancel: %d %s", code, body)
	}
	if code, _, _ := get("POST /ui/logout", mine, ui.CSRFHeader, "1"); code != http.StatusNoContent {
		t.Errorf("logout: %d", code)
	}
	if code, _, _ := get("/ui/", mine); code != http.StatusUnauthorized {
		t.Errorf("page after logout: %d, want 401", code)
	}
}

// checkNodesSince checks GET /v1/nodes?stats=1&since=: malformed cursors
// get a 400 naming since; a cursor past every agent's newest slice gets no
// record (and comes back unchanged); successive calls hand every record
// over exactly once, the same records a full reading shows.
func checkNodesSince(t *testing.T, cl *api.Client, get func(path string) (int, string)) {
	t.Helper()
	for _, bad := range []string{"nonsense", "a0:12", "a0:x.1", "a0:1.2,a0:1.3", "a0:1.2,"} {
		if code, body := get("/v1/nodes?stats=1&since=" + url.QueryEscape(bad)); code != http.StatusBadRequest || !strings.Contains(body, "since=") {
			t.Errorf("since=%s: %d %s, want 400 naming since=", bad, code, body)
		}
	}
	if code, body := get("/v1/local/stats?since=1.x"); code != http.StatusBadRequest || !strings.Contains(body, "since=") {
		t.Errorf("local since=1.x: %d %s, want 400 naming since=", code, body)
	}
	ctx := context.Background()
	full, err := cl.NodesSince(ctx, api.MaxRecords, nil)
	if err != nil || len(full.Nodes) != 2 {
		t.Fatalf("nodes since nothing: %+v, %v", full, err)
	}
	future := api.Cursor{}
	for _, n := range full.Nodes {
		future[n.Name] = api.RecordID{Epoch: math.MaxUint64, Seq: 1}
	}
	if rep, err := cl.NodesSince(ctx, api.MaxRecords, future); err != nil || rep.Cursor != future.String() {
		t.Errorf("since a future slice: cursor %q (%v), want %q unchanged", rep.Cursor, err, future)
	} else {
		for _, n := range rep.Nodes {
			if n.Stats == nil || len(n.Stats.Records) != 0 {
				t.Errorf("node %s since a future slice: %+v, want statistics and no record", n.Name, n.Stats)
			}
		}
	}

	got := map[string][]telemetry.SliceRecord{}
	take := func(rep api.NodesReport) {
		for _, n := range rep.Nodes {
			if n.Stats != nil {
				got[n.Name] = append(got[n.Name], n.Stats.Records...)
			}
		}
	}
	take(full)
	cursor := full.Cursor
	for range 2 { // two successive calls, each once every agent has new slices
		var rep api.NodesReport
		eventually(t, 30*time.Second, func() error {
			c, err := api.ParseCursor(cursor)
			if err != nil {
				t.Fatalf("cursor %q: %v", cursor, err)
			}
			if rep, err = cl.NodesSince(ctx, api.MaxRecords, c); err != nil {
				return err
			}
			for _, n := range rep.Nodes {
				if n.Stats == nil || len(n.Stats.Records) == 0 {
					return fmt.Errorf("node %s has no new record since %s", n.Name, cursor)
				}
			}
			return nil
		})
		take(rep)
		cursor = rep.Cursor
	}
	recordsOnce(t, cl, got, cursor, nil)
}

// recordsOnce checks that the records read with since= (got, by node, in
// the order read) are those the agents (of names; nil: all) keep up to
// cursor, the last report's, each once.
func recordsOnce(t *testing.T, cl *api.Client, got map[string][]telemetry.SliceRecord, cursor string, names []string) {
	t.Helper()
	last, err := api.ParseCursor(cursor)
	if err != nil {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	// Read everything the agents keep now, without a cursor: up to the
	// last cursor, the same records as those read, each once.
	all, err := cl.NodesRecords(context.Background(), api.MaxRecords)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all.Nodes {
		if names != nil && !slices.Contains(names, n.Name) {
			continue
		}
		if n.Stats == nil {
			t.Errorf("node %s: no statistics", n.Name)
			continue
		}
		var kept []api.RecordID
		for _, r := range n.Stats.Records {
			if api.IDOf(r).Compare(last[n.Name]) <= 0 {
				kept = append(kept, api.IDOf(r))
			}
		}
		var read []api.RecordID
		for _, r := range got[n.Name] {
			read = append(read, api.IDOf(r))
		}
		// The agent forgets its oldest beyond MaxRecords: compare the tail.
		if len(kept) > len(read) || (len(kept) < len(read) && len(n.Stats.Records) < api.MaxRecords) || !slices.Equal(kept, read[len(read)-len(kept):]) {
			t.Errorf("node %s: records read with since= %v…, the agent's %v…: want the same, each once", n.Name, headIDs(read), headIDs(kept))
		}
	}
}

func headIDs(ids []api.RecordID) []api.RecordID { return ids[:min(len(ids), 5)] }
