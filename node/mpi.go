package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
)

// cosched's MPI library (api.MPICosched, docs/mpi.md): MPICH programs run
// on it unmodified because the agent puts its directory first in their
// LD_LIBRARY_PATH, where the dynamic linker finds it before MPICH's own
// libmpich.so.12. Every message then goes through the relay; no PMI.

// MPILibName is the file the agent looks for in the library's directory:
// the soname MPICH programs are linked against.
const MPILibName = "libmpich.so.12"

// mpiLibDir is where the agent looks for cosched's MPI library: the
// configured directory, else lib/cosched beside the directory of the
// agent's executable (make build puts bin/cosched and lib/cosched/ side
// by side), through symbolic links.
func mpiLibDir(configured string) string {
	if configured != "" {
		return configured
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Join(filepath.Dir(exe), "..", "lib", "cosched")
}

// mpiLibEnv is the environment setting that gives a cosched-MPI job's
// ranks the library, ahead of what env (their environment so far, later
// entries winning) has in LD_LIBRARY_PATH; an error, naming where the
// agent looked and how to build it, if the library is not there.
func (a *Agent) mpiLibEnv(env []string) (string, error) {
	dir := filepath.Clean(a.mpiLib)
	lib := filepath.Join(dir, MPILibName)
	if st, err := os.Stat(lib); err != nil || !st.Mode().IsRegular() {
		where := dir + " (--mpi-lib)"
		if a.cfg.MPILib == "" {
			where = dir + " (lib/cosched beside the agent's bin directory)"
		}
		why := "no such file"
		if err == nil {
			why = "not a regular file"
		} else if !errors.Is(err, os.ErrNotExist) {
			why = err.Error()
		}
		return "", fmt.Errorf("--mpi cosched: agent %s has no MPI library of cosched (build it with `make build`, which puts it in lib/cosched/ beside bin/cosched, or give the agent --mpi-lib DIR): looked for %s in %s: %s",
			a.cfg.Name, MPILibName, where, why)
	}
	v := dir
	for i := len(env) - 1; i >= 0; i-- {
		if old, ok := strings.CutPrefix(env[i], "LD_LIBRARY_PATH="); ok {
			if old != "" {
				v += ":" + old
			}
			break
		}
	}
	return "LD_LIBRARY_PATH=" + v, nil
}

// rankAborted ends a job's local ranks: one of them called MPI_Abort (the
// relay's OnAbort). Their exits carry the reason (rankEnd) to the
// controller, which ends the job everywhere.
func (a *Agent) rankAborted(job int64, rank int, ab comm.Abort) {
	a.log.Info("MPI_Abort: the job's ranks here are killed", zap.Int64("job", job), zap.Int("rank", rank), zap.Int("code", ab.Code))
	if err := a.ranks.Kill(job); err != nil {
		a.log.Debug("kill after MPI_Abort", zap.Int64("job", job), zap.Int("rank", rank), zap.Error(err))
	}
}

// rankEndWait bounds how long an exit's report waits for the relay to
// read what the rank wrote last (relay.RankEnd): a child that inherited
// the rank's connection can keep it open.
const rankEndWait = time.Second

// relayFailure is why a rank that exited counts as failed, as far as the
// relay knows, and the whole job's reason when a rank of the job here
// called MPI_Abort ("" if neither).
func (a *Agent) relayFailure(m rankExit) (failure, jobReason string) {
	ctx, cancel := context.WithTimeout(context.Background(), rankEndWait)
	defer cancel()
	end := a.relay.RankEnd(ctx, m.Job, m.Rank)
	if rank, ab, ok := a.relay.JobAbort(m.Job); ok {
		jobReason = truncate(abortReason(rank, a.cfg.Name, ab), 2*maxExitText)
	}
	switch {
	case end.Abort != nil:
		failure = truncate(abortText(*end.Abort), 2*maxExitText)
	case end.Connected && !end.Finalized && m.Code == 0 && m.Signal == "":
		// A rank that used comm and ended without Finalize has failed,
		// whatever its status: its peers may wait for it forever.
		a.mu.Lock()
		mpi := a.mpiJobs[m.Job]
		a.mu.Unlock()
		failure = "ended without comm.Finalize"
		if mpi {
			failure = "ended after MPI_Init without MPI_Finalize"
		}
	}
	return failure, jobReason
}

// unsupportedSuffix ends the Abort text of cosched's MPI library for a
// call it does not implement.
const unsupportedSuffix = "is not supported by cosched's MPI"

// abortText is what a rank's Abort says of it: that it called MPI_Abort,
// with the code and message, or the message alone for a call cosched's
// MPI library does not support.
func abortText(ab comm.Abort) string {
	if strings.HasSuffix(ab.Error, unsupportedSuffix) {
		return ab.Error
	}
	s := fmt.Sprintf("called MPI_Abort (exit code %d)", ab.Code)
	if ab.Error != "" {
		s += ": " + ab.Error
	}
	return s
}

// abortReason is a job's reason when rank, on node, called MPI_Abort
// (or a call cosched's MPI library does not support).
func abortReason(rank int, node string, ab comm.Abort) string {
	if strings.HasSuffix(ab.Error, unsupportedSuffix) {
		return fmt.Sprintf("rank %d on %s: %s", rank, node, ab.Error)
	}
	return fmt.Sprintf("rank %d on %s %s", rank, node, abortText(ab))
}
