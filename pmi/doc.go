// Package pmi serves the PMI-1 wire protocol ("simple PMI") that MPICH's
// ranks use to learn their rank, size and how to reach their peers, so
// unmodified MPICH programs run as cosched jobs.
//
// A rank finds its connection through the environment (Env): PMI_FD (a
// socketpair end the agent passes at spawn, descriptor FD), PMI_RANK and
// PMI_SIZE; MPI_LOCALRANKID/MPI_LOCALNRANKS and COSCHED_LOCAL_RANK/
// COSCHED_LOCAL_SIZE give its rank among its node's ranks. Commands are
// lines "cmd=NAME key=value …" (Parse, Encode), bounded by MaxLine,
// MaxKey and MaxValue; the commands served are init, get_maxes,
// get_appnum, get_my_kvsname, get_universe_size, put, get, barrier_in,
// finalize and abort, with the replies MPICH's client and hydra use.
//
// The protocol is a pure state machine (Job, one per job and agent: the
// key-value space and the barrier; Gather, one per job at the controller:
// a barrier ends when every agent hosting ranks has all its ranks in it,
// and carries the puts made since the previous barrier). Server is the
// I/O shell an agent runs: one reader goroutine per rank connection.
//
// Ranks that outlive their agent (node, KeepRanks) talk through a keeper
// that holds their connection; when the agent dies the keeper resumes it
// with the agent's next life (ServeResume, resume.go), which starts the
// job from what the previous life recorded at its last barrier (Snapshot,
// Hooks.Ended, RestoreJob), and replays the rank's commands since.
//
// Bad input never hangs or crashes the agent: a malformed line, a line
// too long, an unknown command or a barrier entered twice ends the job
// with the reason (Hooks.Fail); a key or value too long, a duplicate key,
// a get of a missing key or a call of the name service (publish_name,
// lookup_name, unpublish_name: not served) gets the protocol's error
// reply (rc=-1).
package pmi
