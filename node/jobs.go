package node

import (
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node/ctl"
)

// viewOf renders the machine's record of a job for the API.
func viewOf(m *ctl.Machine, j ctl.Job, now time.Time) api.Job {
	v := api.Job{
		ID:     j.ID,
		Spec:   j.Spec,
		State:  j.State,
		Reason: j.Reason,
		Submit: j.Submit,
		Row:    j.Row,
		Ranks:  j.Ranks,
	}
	for _, r := range j.Ranks {
		if r.Usage != nil {
			if v.Usage == nil {
				v.Usage = &api.JobUsage{}
			}
			v.Usage.Add(*r.Usage)
		}
	}
	if j.State == api.Pending {
		v.Reason = m.Explain(j.ID)
	}
	if !j.Start.IsZero() {
		start := j.Start
		v.Start = &start
		end := now
		if !j.End.IsZero() {
			e := j.End
			v.End = &e
			end = e
		}
		v.Elapsed = api.Duration{D: end.Sub(start)}
		for _, r := range j.Ranks {
			v.Nodes = append(v.Nodes, r.Node)
		}
		if j.End.IsZero() {
			v.Rows, v.Columns = j.Rows, j.Columns
		}
	}
	return v
}
