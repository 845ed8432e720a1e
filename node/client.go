package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/clusterkey"
)

// Client calls an agent's HTTP API (any agent: others forward to the
// controller).
type Client struct {
	Addr string // host:port (for messages when the client uses a Unix socket)
	HTTP *http.Client
	// Token, when set, is called for every request; a non-empty result
	// goes in its Authorization header. Nil: no credential (a Unix-socket
	// client, or an agent without a cluster key).
	Token func() (string, error)
}

// NewClient returns a client for the agent at addr, without a credential.
func NewClient(addr string) *Client {
	return &Client{Addr: addr, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// NewKeyClient returns a client for the agent at addr that signs a fresh
// token for this process's effective uid and gid with key before every
// request.
func NewKeyClient(addr string, key *clusterkey.Key) *Client {
	c := NewClient(addr)
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
	return &Client{Addr: "unix:" + path, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: tr}}
}

// Error is an API error answer.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	host := c.Addr
	if strings.HasPrefix(host, "unix:") {
		host = "cosched" // the transport dials the socket; any host will do
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+host+path, body)
	if err != nil {
		return err
	}
	if c.Token != nil {
		t, err := c.Token()
		if err != nil {
			return fmt.Errorf("credential for %s: %w", c.Addr, err)
		}
		if t != "" {
			req.Header.Set("Authorization", AuthScheme+" "+t)
		}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the cluster at %s: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer from %s: %w", c.Addr, err)
	}
	if ct := resp.Header.Get("Content-Type"); len(data) > 0 && !isJSON(ct) {
		// An HTML page, a proxy's error: some other server is there.
		return &NotAgentError{Addr: c.Addr, Status: resp.StatusCode, ContentType: ct}
	}
	if resp.StatusCode >= 300 {
		var e APIError
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = string(bytes.TrimSpace(data))
		}
		return &Error{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("unexpected answer from %s: %w", c.Addr, err)
	}
	return nil
}

// Submit submits a job and returns its id.
func (c *Client) Submit(ctx context.Context, spec JobSpec) (int64, error) {
	var s Submitted
	err := c.do(ctx, http.MethodPost, "/v1/jobs", spec, &s)
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

// LocalStats returns the strobe statistics of the agent this client talks
// to (not forwarded to the controller), with its per-slice records after
// slice since. Records are kept for the last few thousand slices: poll at
// least that often to see every slice.
func (c *Client) LocalStats(ctx context.Context, since uint64) (NodeStats, error) {
	var st NodeStats
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/local/stats?since=%d", since), nil, &st)
	return st, err
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
