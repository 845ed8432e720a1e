package jobcg

// FrozenKills is how many of a v1 job's kills had to freeze its cgroup
// (0 for v2 and for a job without cgroups).
func FrozenKills(j *Job) int {
	if g, ok := j.g.(*v1Group); ok {
		return g.frozenKills
	}
	return 0
}
