package rank

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/node/rank/shim"
)

// ShimExitCode is the status with which ShimMain reports any failure.
const ShimExitCode = shim.ExitCode

// keeperArg starts ShimMain's keeper mode (shim.KeeperArg).
const keeperArg = shim.KeeperArg

// ShimMain is the body of the hidden subcommand that starts a rank stopped
// or keeps it (shim.Main, which a shim binary can call without linking the
// manager: cmd/cosched-rank).
func ShimMain(args []string) int { return shim.Main(args) }

// exitRecord is what the keeper writes when its program has ended
// (JOB.RANK.exit).
type exitRecord = shim.ExitRecord

// describe fills the status and resource fields of e.
func describe(e *Exit, ws unix.WaitStatus, ru *unix.Rusage) {
	r := shim.Describe(ws, ru)
	e.Code, e.Signal, e.CPUTime, e.MaxRSS = r.Code, r.Signal, time.Duration(r.CPUTime), r.MaxRSS
}
