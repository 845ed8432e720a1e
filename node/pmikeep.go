package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/node/rank/shim"
	"github.com/cosched/cosched/pmi"
)

// This file lets a --mpi pmi job's ranks outlive their agent
// (Config.KeepRanks; docs/runtime.md, "Agent restarts"): each rank's
// keeper holds its PMI connection and, when the agent dies, connects to
// its next life at pmiResumeAddr, which restores the job's key-value
// space and barrier count from the state directory (pmiSnapshotFile,
// written at each barrier's end) and takes the connection as the rank's
// (pmi.Server.ServeResume).

// pmiResumeAddr is where keepers find the agent's next life: an abstract
// unix socket named for the state directory (no file: no permission for
// the ranks' users to grant, no path length limit, nothing stale after a
// crash). Whoever connects must be the keeper of the rank it names
// (authorizeKeeper).
func pmiResumeAddr(cfg Config) string {
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		dir = cfg.StateDir
	}
	sum := sha256.Sum256([]byte(dir))
	return "@cosched-pmi-" + hex.EncodeToString(sum[:8])
}

// pmiResumeEnv tells a kept rank's keeper to hold its PMI connection and
// where to resume it (shim.EnvPMIResume).
func (a *Agent) pmiResumeEnv(job int64, rank int) string {
	return fmt.Sprintf("%s=addr=%s job=%d rank=%d grace=%s", shim.EnvPMIResume, pmiResumeAddr(a.cfg), job, rank, a.relayGrace())
}

// pmiSnapshotFile holds a --mpi pmi job's PMI state as of its last
// barrier on this node.
func pmiSnapshotFile(cfg Config, job int64) string {
	return filepath.Join(cfg.StateDir, "jobs", strconv.FormatInt(job, 10), "pmi.msgpack")
}

// pmiEnded records a job's PMI state at a barrier's end, before its ranks
// hear of it (pmi.Hooks.Ended): with KeepRanks only.
func (a *Agent) pmiEnded(job int64, sn pmi.Snapshot) {
	if !a.cfg.KeepRanks {
		return
	}
	b, err := msgpack.Marshal(sn)
	if err == nil {
		path := pmiSnapshotFile(a.cfg, job)
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = atomicfile.WriteFile(path, b)
		}
	}
	if err != nil {
		a.log.Error("PMI state not recorded: the job's ranks could not resume PMI after a restart", zap.Int64("job", job), zap.Error(err))
	}
}

// readPMISnapshot reads what pmiEnded recorded for a job; nil if nothing
// (no barrier has ended yet).
func readPMISnapshot(cfg Config, job int64) (*pmi.Snapshot, error) {
	b, err := os.ReadFile(pmiSnapshotFile(cfg, job))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sn pmi.Snapshot
	if err := msgpack.Unmarshal(b, &sn); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", pmiSnapshotFile(cfg, job), err)
	}
	return &sn, nil
}

// servePMIResume listens for keepers that come back (KeepRanks only).
func (a *Agent) servePMIResume() error {
	if !a.cfg.KeepRanks {
		return nil
	}
	ln, err := net.Listen("unix", pmiResumeAddr(a.cfg))
	if err != nil {
		return fmt.Errorf("PMI resume socket: %w", err)
	}
	return a.pmi.ServeResume(ln, a.authorizeKeeper)
}

// authorizeKeeper lets a connection speak for rank of job only if its
// peer is that rank's keeper: the process this agent started or adopted
// for it (the kernel's peer credentials, not what the peer says).
func (a *Agent) authorizeKeeper(job int64, rank int, c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("peer credentials: %w", credErr)
	}
	for _, l := range a.ranks.Live() {
		if l.Job == job && l.Rank == rank {
			if l.PID != int(cred.Pid) {
				return fmt.Errorf("pid %d speaks for job %d rank %d, whose keeper is pid %d", cred.Pid, job, rank, l.PID)
			}
			return nil
		}
	}
	return fmt.Errorf("pid %d speaks for job %d rank %d, which does not run here", cred.Pid, job, rank)
}
