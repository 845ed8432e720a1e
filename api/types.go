package api

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Job is a job as the API reports it.
type Job struct {
	ID     int64      `json:"id"`
	Spec   JobSpec    `json:"spec"`
	State  State      `json:"state"`
	Reason string     `json:"reason,omitempty"` // why it waits, or why it failed
	Submit time.Time  `json:"submit"`
	Start  *time.Time `json:"start,omitempty"`
	End    *time.Time `json:"end,omitempty"`
	Row    int        `json:"row"`
	// Rows are the matrix rows it runs in (its own, Row, and the
	// alternates it fits in), Columns its matrix columns in rank order:
	// its place in the matrix, public as the queue is (a running job's).
	Rows    []int      `json:"rows,omitempty"`
	Columns []int      `json:"columns,omitempty"`
	Nodes   []string   `json:"nodes,omitempty"` // in rank order, one per rank
	Ranks   []RankInfo `json:"ranks,omitempty"`
	Elapsed Duration   `json:"elapsed"` // running time so far, or in all
	// Usage is the job's accounting from its cgroups (once its ranks
	// have ended on a node; absent where agents run without cgroups).
	Usage *JobUsage `json:"usage,omitempty"`
}

// NodeInfo is an agent as the API reports it.
type NodeInfo struct {
	Name       string     `json:"name"`
	State      string     `json:"state"`      // "up" or "down"
	Controller bool       `json:"controller"` // controller-eligible (one of the controllers' group)
	Leader     bool       `json:"leader"`     // its controller leads: it schedules and answers the API
	APIAddr    string     `json:"api_addr"`
	CPUs       int        `json:"cpus"`
	Memory     int64      `json:"memory,omitempty"` // bytes offered to jobs (MemTotal less the reserve); 0: not advertised
	Columns    []int      `json:"columns"`          // the matrix columns it hosts
	Jobs       []int64    `json:"jobs,omitempty"`
	Stats      *NodeStats `json:"stats,omitempty"`
}

// UILogin is the answer to POST /v1/ui/login: a link that logs a browser
// in as the caller once, before Expires (docs/ui.md).
type UILogin struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// Submitted is the answer to a submission.
type Submitted struct {
	ID int64 `json:"id"`
}

// APIError is the body of every 4xx/5xx answer.
type APIError struct {
	Error string `json:"error"`
}

// ParseJobID reads a job id as users type it ("12").
func ParseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("job id %q: want a positive integer", s)
	}
	return id, nil
}
