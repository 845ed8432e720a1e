package node_test

import (
	"testing"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/sharing"
)

// A rank that exits while its siblings on the node are still being
// started is not the node's last: the job's cgroup (and whatever the later
// ranks are started into) stays until every rank here has exited. Ranks
// that exit at once make the window wide: each later rank's fork and exec
// comes after the first one's exit.
func TestRankExitingDuringItsJobsLaunchKillsNoSibling(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 1, processors: 8, mode: sharing.Space})
	for range 3 {
		id := c.submit(api.JobSpec{Command: []string{"true"}, Processors: 8})
		if j := c.waitState(id, api.Completed, startBound); j.State != api.Completed {
			t.Fatalf("job %d: %s (%s)", id, j.State, j.Reason)
		}
	}
}
