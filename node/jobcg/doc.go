// Package jobcg contains an agent's jobs in control groups: one cgroup per
// job per node, under a subtree the agent owns (<own cgroup>/cosched/<agent>
// in every hierarchy it uses). It supports the unified hierarchy (cgroup
// v2) and the legacy or hybrid one (cgroup v1: freezer, memory, pids,
// cpuacct), through github.com/containerd/cgroups/v3, and falls back to
// nothing (ModeNone: the rank manager's process groups alone) where
// neither can be used; Open says why.
//
// # Lifecycle
//
//	t, err := jobcg.Open(jobcg.Config{Agent: "n1", Log: log}) // kills and removes a previous life's jobs
//	j, err := t.Create(7, 3<<30)   // job 7, memory limit 3 GiB on this node
//	rank.Spec{…, Cgroup: j}        // each rank is born inside it
//	j.Freeze() … j.Thaw()          // --suspend freezer
//	st, err := t.Remove(7)         // kill whatever is left, read the accounting, rmdir
//	t.Close()                      // agent shutdown: every job killed and removed
//
// # Birth inside the cgroup
//
// A rank must never run outside its job's cgroup, or a fast child could
// escape before it is moved. On v2 the rank is cloned straight into the
// cgroup (clone3 CLONE_INTO_CGROUP, through a directory descriptor Enter
// returns). On v1 the forking thread itself (the rank manager's locked
// spawner thread) is moved into the job's cgroups just before the fork and
// back just after: a child inherits its forking thread's cgroups, so it is
// born inside. The agent's other threads never move.
//
// # Killing
//
// Kill SIGKILLs every process in the cgroup: on v2 kernels with
// cgroup.kill one write does it (without it, containerd's freeze, kill,
// thaw: v2 delivers a fatal signal to a frozen task). On v1 it kills what
// it lists, round by round, until a round finds nothing new, and freezes
// the cgroup (kill, then thaw) only for a tree that keeps forking, or a
// job suspended frozen: v1 delivers a frozen task's SIGKILL only at the
// thaw, so an agent killed between the two would leave its job frozen
// until its cleanup guard (node/guard.go) thaws and kills it. Remove then
// waits for the cgroup to empty and removes it.
//
// # Suspension
//
// Freeze and Thaw are one write each to freezer.state (v1) or cgroup.freeze
// (v2) and do not wait for the transition to complete, like SIGSTOP: a
// task stops at its next return to user mode. A frozen process sees no
// signal and its parent no stop notification.
//
// # Concurrency
//
// A Tree and its Jobs are safe for concurrent use.
package jobcg
