// Package pmix serves PMIx to a job's ranks (--mpi pmix: Open MPI
// programs) through OpenPMIx's own server library, run in a small helper
// process per job and node (server/cosched-pmix.c, built by build.sh into
// lib/cosched/cosched-pmix): the library speaks the wire protocol to the
// ranks; the helper registers the job's namespace and ranks, gives each
// rank its environment (PMIx_server_setup_fork) and reports fences,
// aborts and finalizes to the agent over its stdin/stdout.
//
// The agent's side (Server) starts and stops the helpers, carries each
// fence across nodes as a PMI-1 barrier (pmi.Barrier: one key per node,
// its part of the fence's data), and tells the agent why a job fails: a
// rank's PMIx_Abort, a rank that ended without PMIx_Finalize, the
// helper's death. A crash of the helper (a bug, a hostile client on its
// socket) fails its job only; the agent is a pure Go program and never
// loads the library.
package pmix
