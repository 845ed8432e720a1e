package nowsim

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/cosched/cosched/jss/swf"
)

// Dropped counts trace jobs left out, by reason.
type Dropped struct {
	NoSize    int64 `json:"no_size"`
	NoRuntime int64 `json:"no_runtime"`
	NoSubmit  int64 `json:"no_submit"`
	TooWide   int64 `json:"too_wide"`
}

// Total is the number of jobs dropped.
func (d Dropped) Total() int64 { return d.NoSize + d.NoRuntime + d.NoSubmit + d.TooWide }

// ReadSWF turns a trace into jobs for a machine of n nodes: tasks = field 8
// (requested processors), else field 5; processing time = field 4 (the run
// time, taken as the time on a node of speed 1); submit = field 2; program =
// field 14 (executable) when known. Field 9 is not used: estimates come
// from the run's estimator. Jobs are numbered by field 1 when it is
// positive and unique, else by their position.
func ReadSWF(rd *swf.Reader, n int) ([]Job, Dropped, error) {
	var jobs []Job
	var d Dropped
	seen := map[int64]bool{}
	for pos := int64(1); ; pos++ {
		r, err := rd.Next()
		if err == io.EOF {
			return jobs, d, nil
		}
		if err != nil {
			return nil, d, fmt.Errorf("nowsim: %w", err)
		}
		tasks := r.RequestedProcessors
		if tasks <= 0 {
			tasks = r.AllocatedProcessors
		}
		switch {
		case tasks <= 0:
			d.NoSize++
			continue
		case r.RunTime < 0:
			d.NoRuntime++
			continue
		case r.SubmitTime < 0:
			d.NoSubmit++
			continue
		case tasks > float64(n):
			d.TooWide++
			continue
		}
		id := int64(r.JobNumber)
		if id <= 0 || seen[id] {
			id = -pos // position, kept apart from field-1 numbers
		}
		seen[id] = true
		j := Job{
			ID:     id,
			Submit: seconds(r.SubmitTime),
			Tasks:  int(math.Ceil(tasks)),
			Work:   seconds(r.RunTime),
		}
		if r.Executable >= 1 {
			j.Program = fmt.Sprintf("exe-%d", int64(r.Executable))
		}
		if len(jobs) == MaxJobs {
			return nil, d, fmt.Errorf("nowsim: more than %d jobs in the trace (they are held in memory)", MaxJobs)
		}
		jobs = append(jobs, j)
	}
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
