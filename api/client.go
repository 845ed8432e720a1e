package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cosched/cosched/clusterkey"
)

// Client calls a cluster's HTTP API through any of its agents (others
// forward to the controller). It is safe for concurrent use.
//
// When the agent it prefers does not answer, it tries the other agents it
// knows — those given to NewClient and, after the first answer, every agent
// in the cluster's node list — and prefers the first that answers. A
// submission is sent to another agent only when the first could not be
// connected to (so it cannot have been taken twice); reads and
// cancellations are retried on any transport error. An answer that says
// "retry later" (503 with Retry-After: no controller leads yet, e.g. during
// a failover) is retried for up to RetryFor.
type Client struct {
	HTTP *http.Client
	// Token, when set, is called for every request; a non-empty result
	// goes in its Authorization header. Nil: no credential (a Unix-socket
	// client, or an agent without a cluster key).
	Token func() (string, error)
	// RetryFor bounds the retries of "retry later" answers (0: none).
	RetryFor time.Duration

	home string // the agent given first: calls about one agent go there only

	mu      sync.Mutex
	addrs   []string // in the order to try; addrs[0] is preferred
	learned bool     // the node list was read once
}

// NewClient returns a client that talks to the agent at addr first, then to
// the others.
func NewClient(addr string, others ...string) *Client {
	c := &Client{HTTP: &http.Client{Timeout: 30 * time.Second}, RetryFor: 10 * time.Second, home: addr}
	c.add(addr)
	for _, o := range others {
		c.add(o)
	}
	return c
}

// Addr is the agent the client prefers now.
func (c *Client) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.addrs) == 0 {
		return ""
	}
	return c.addrs[0]
}

// Addrs lists the agents the client knows, preferred first.
func (c *Client) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.addrs)
}

func (c *Client) add(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if addr != "" && !slices.Contains(c.addrs, addr) {
		c.addrs = append(c.addrs, addr)
	}
}

func (c *Client) prefer(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.addrs, addr); i > 0 {
		c.addrs = slices.Insert(slices.Delete(c.addrs, i, i+1), 0, addr)
	}
}

// NewKeyClient returns a client for the agent at addr (then the others)
// that signs a fresh
// token for this process's effective uid and gid with key before every
// request.
func NewKeyClient(key *clusterkey.Key, addr string, others ...string) *Client {
	c := NewClient(addr, others...)
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	c.Token = func() (string, error) {
		return key.Mint(uid, gid, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	}
	return c
}

// NewUnixClient returns a client for the agent whose API socket is at
// path: the agent learns who this process is from the kernel.
func NewUnixClient(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	c := NewClient("unix:" + path)
	c.HTTP.Transport = tr
	c.learned = true // the socket reaches this agent only: no others to learn
	return c
}

// Error is an API error answer.
type Error struct {
	Status  int
	Message string
	// retryAfter is set when the answer says the request was not acted on
	// and may be repeated later.
	retryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

// unreachableError: no answer from an agent. dialed says whether a
// connection was made (a request may then have been received).
type unreachableError struct {
	addr   string
	dialed bool
	err    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the cluster at %s: %v", e.addr, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.send(ctx, method, path, in, out, false)
}

// repeatPause is how long a repeatable request waits before it is sent
// again after an ambiguous failure.
const repeatPause = 250 * time.Millisecond

// send sends a request, repeating "retry later" answers for up to
// RetryFor. A repeatable request (one the cluster takes at most once, e.g.
// a submission with a SubmitKey) is also repeated, on any agent, after the
// failures that leave its fate unknown: a connection that broke after it
// was sent, a forwarding agent's 502.
func (c *Client) send(ctx context.Context, method, path string, in, out any, repeatable bool) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = b
	}
	var deadline time.Time
	if c.RetryFor > 0 {
		deadline = time.Now().Add(c.RetryFor)
	}
	for {
		err := c.tryAgents(ctx, method, path, body, out, repeatable)
		wait := retryWait(err, repeatable)
		if wait <= 0 || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// retryWait is how long to wait before sending a request again after err,
// 0 if it must not be sent again.
func retryWait(err error, repeatable bool) time.Duration {
	var apiErr *Error
	var un *unreachableError
	switch {
	case errors.As(err, &apiErr) && apiErr.retryAfter > 0:
		return apiErr.retryAfter
	case !repeatable:
		return 0
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusBadGateway, errors.As(err, &un):
		return repeatPause
	}
	return 0
}

// tryAgents sends the request to the preferred agent, then to the others
// while they do not answer.
func (c *Client) tryAgents(ctx context.Context, method, path string, body []byte, out any, repeatable bool) error {
	addrs := c.Addrs()
	if len(addrs) == 0 {
		return errors.New("no agent address to talk to")
	}
	var first error
	for _, addr := range addrs {
		err := c.doAt(ctx, addr, method, path, body, out)
		var un *unreachableError
		if !errors.As(err, &un) {
			// An answer, good or bad: this agent is up.
			c.prefer(addr)
			if err == nil {
				c.learn(ctx, addr)
			}
			return err
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil || (method == http.MethodPost && un.dialed && !repeatable) {
			break
		}
	}
	if len(addrs) > 1 {
		return fmt.Errorf("%w (nor did %d other agents answer)", first, len(addrs)-1)
	}
	return first
}

// learn reads the cluster's node list once, so the client knows agents to
// try when the one it talks to stops answering.
func (c *Client) learn(ctx context.Context, addr string) {
	c.mu.Lock()
	done := c.learned
	c.learned = true
	c.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r NodesReport
	if c.doAt(ctx, addr, http.MethodGet, "/v1/nodes", nil, &r) != nil {
		return
	}
	for _, n := range r.Nodes {
		if n.State == "up" {
			c.add(n.APIAddr)
		}
	}
}

func (c *Client) doAt(ctx context.Context, addr, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	host := addr
	if strings.HasPrefix(host, "unix:") {
		host = "cosched" // the transport dials the socket; any host will do
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+host+path, rd)
	if err != nil {
		return err
	}
	if c.Token != nil {
		t, err := c.Token()
		if err != nil {
			return fmt.Errorf("credential for %s: %w", addr, err)
		}
		if t != "" {
			req.Header.Set("Authorization", AuthScheme+" "+t)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var op *net.OpError
		dialFailed := errors.As(err, &op) && op.Op == "dial"
		return &unreachableError{addr: addr, dialed: !dialFailed, err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer from %s: %w", addr, err)
	}
	if ct := resp.Header.Get("Content-Type"); len(data) > 0 && !isJSON(ct) {
		// An HTML page, a proxy's error: some other server is there.
		return &NotAgentError{Addr: addr, Status: resp.StatusCode, ContentType: ct}
	}
	if resp.StatusCode >= 300 {
		var e APIError
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = string(bytes.TrimSpace(data))
		}
		apiErr := &Error{Status: resp.StatusCode, Message: e.Error}
		if resp.StatusCode == http.StatusServiceUnavailable {
			if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
				// Retry-After counts seconds; a failover takes about one.
				apiErr.retryAfter = min(time.Duration(max(secs, 1))*time.Second, 250*time.Millisecond)
			}
		}
		return apiErr
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("unexpected answer from %s: %w", addr, err)
	}
	return nil
}

// Submit submits a job and returns its id.
//
// It gives the spec a fresh SubmitKey unless it has one, so that a POST
// whose answer was lost (the connection broke after it was sent, a
// forwarding agent answered 502 because the leader died) is sent again,
// for up to RetryFor, without risking a second job.
func (c *Client) Submit(ctx context.Context, spec JobSpec) (int64, error) {
	if spec.SubmitKey == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("a submit key: %w", err)
		}
		spec.SubmitKey = hex.EncodeToString(b[:])
	}
	var s Submitted
	err := c.send(ctx, http.MethodPost, "/v1/jobs", spec, &s, true)
	return s.ID, err
}

// Jobs lists pending and running jobs, or all of them.
func (c *Client) Jobs(ctx context.Context, all bool) ([]Job, error) {
	var jobs []Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs?all="+strconv.FormatBool(all), nil, &jobs)
	return jobs, err
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id int64) (Job, error) {
	var j Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+strconv.FormatInt(id, 10), nil, &j)
	return j, err
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, "/v1/jobs/"+strconv.FormatInt(id, 10), nil, nil)
}

// JobLive asks what a job's ranks do now and its cgroups' figures (its
// owner and operators only).
func (c *Client) JobLive(ctx context.Context, id int64) (JobLive, error) {
	var l JobLive
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+strconv.FormatInt(id, 10)+"/live", nil, &l)
	return l, err
}

// LocalJobLive asks the agent given to NewClient for its part of a job
// now (agents and operators only).
func (c *Client) LocalJobLive(ctx context.Context, id int64) (NodeLive, error) {
	var l NodeLive
	err := c.doAt(ctx, c.home, http.MethodGet, "/v1/local/jobs/"+strconv.FormatInt(id, 10)+"/live", nil, &l)
	return l, err
}

// NodesRecords lists the cluster's agents with their statistics and each
// one's last records slice records (at most MaxRecords).
func (c *Client) NodesRecords(ctx context.Context, records int) (NodesReport, error) {
	var r NodesReport
	err := c.do(ctx, http.MethodGet, "/v1/nodes?stats=true&records="+strconv.Itoa(records), nil, &r)
	return r, err
}

// NodesSince lists the cluster's agents with their statistics and, per
// agent, the slice records added after those the cursor names (the
// newest records of each, at most MaxRecords, for an agent it does not
// name). Pass the report's Cursor to the next call; when Cursor.Behind
// names an agent, drop what was read and start again from an empty
// cursor.
func (c *Client) NodesSince(ctx context.Context, records int, cursor Cursor) (NodesReport, error) {
	var r NodesReport
	q := url.Values{"stats": {"true"}, "records": {strconv.Itoa(records)}, "since": {cursor.String()}}
	err := c.do(ctx, http.MethodGet, "/v1/nodes?"+q.Encode(), nil, &r)
	return r, err
}

// Nodes lists the cluster's agents, with their statistics if stats.
func (c *Client) Nodes(ctx context.Context, stats bool) (NodesReport, error) {
	var r NodesReport
	err := c.do(ctx, http.MethodGet, "/v1/nodes?stats="+strconv.FormatBool(stats), nil, &r)
	return r, err
}

// Wait polls a job until it ends (or ctx is done) and returns it.
func (c *Client) Wait(ctx context.Context, id int64, every time.Duration) (Job, error) {
	for {
		j, err := c.Job(ctx, id)
		if err != nil || j.State.Done() {
			return j, err
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(every):
		}
	}
}

// LocalStats returns the strobe statistics of the agent given to NewClient
// (never another: not forwarded to the controller, not tried elsewhere), with its per-slice records after
// slice since. Records are kept for the last few thousand slices: poll at
// least that often to see every slice.
func (c *Client) LocalStats(ctx context.Context, since uint64) (NodeStats, error) {
	var st NodeStats
	err := c.doAt(ctx, c.home, http.MethodGet, fmt.Sprintf("/v1/local/stats?since=%d", since), nil, &st)
	return st, err
}

// LocalStatsAfter is LocalStats with only the records after the one named
// after, in any epoch (a zero RecordID: all of them).
func (c *Client) LocalStatsAfter(ctx context.Context, after RecordID) (NodeStats, error) {
	var st NodeStats
	err := c.doAt(ctx, c.home, http.MethodGet, "/v1/local/stats?since="+after.String(), nil, &st)
	return st, err
}

// UILogin asks the agent given to NewClient (never another: the session
// it opens lives there) for a link that logs a browser in as the caller:
// see docs/ui.md.
func (c *Client) UILogin(ctx context.Context) (UILogin, error) {
	var l UILogin
	err := c.doAt(ctx, c.home, http.MethodPost, "/v1/ui/login", nil, &l)
	return l, err
}

// NotAgentError is an answer that is not the API's: the address reaches
// some other HTTP server.
type NotAgentError struct {
	Addr        string
	Status      int
	ContentType string
}

func (e *NotAgentError) Error() string {
	ct, _, _ := strings.Cut(e.ContentType, ";")
	if ct == "" {
		ct = "no content type"
	}
	return fmt.Sprintf("the server at %s is not a cosched agent (HTTP %d %s)", e.Addr, e.Status, strings.TrimSpace(ct))
}

// isJSON reports whether a Content-Type is JSON, as the API always answers.
func isJSON(contentType string) bool {
	ct, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}
