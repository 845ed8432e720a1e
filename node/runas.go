package node

import (
	"fmt"
	"github.com/cosched/cosched/api"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// rankUser is who a job's ranks run as on this node, where, and with what
// environment.
type rankUser struct {
	cred *syscall.Credential // nil: the agent's own user
	dir  string              // "": the rank's log directory
	env  []string            // the base environment when cred is set
}

// cleanPath is the PATH of ranks that run as another user than the
// agent's (none of the agent's environment reaches them).
const cleanPath = "/usr/local/bin:/usr/bin:/bin"

// runAs decides how this agent runs a job owned by o in dir:
//
//   - no owner (an older controller): as the agent, as before;
//   - the owner is the agent's own user: as the agent, with the agent's
//     environment (it is that user's);
//   - the agent is root: as the owner's uid, the authenticated gid and
//     the supplementary groups of the owner's account on this node, with
//     a clean environment (HOME, USER, LOGNAME, PATH, then the job's
//     COSCHED_* variables), in dir or else the owner's home directory;
//   - otherwise the job is refused: only root starts processes as
//     another user.
//
// An owner without an account on this node is refused, as Slurm does.
func runAs(o *api.Owner, dir string) (rankUser, error) {
	ru := rankUser{dir: dir}
	if o == nil {
		return ru, nil
	}
	euid := os.Geteuid()
	if uint32(euid) == o.UID {
		return ru, nil
	}
	if why := mayRunAs(*o); why != "" {
		return ru, fmt.Errorf("user %s: %s", o.User, why)
	}
	uid := strconv.FormatUint(uint64(o.UID), 10)
	u, err := user.LookupId(uid)
	if err != nil {
		return ru, fmt.Errorf("user %s (uid %s) has no account on this node: %w", o.User, uid, err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return ru, fmt.Errorf("groups of user %s: %w", u.Username, err)
	}
	groups := make([]uint32, 0, len(gids))
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			groups = append(groups, uint32(n))
		}
	}
	ru.cred = &syscall.Credential{Uid: o.UID, Gid: o.GID, Groups: groups}
	if ru.dir == "" {
		ru.dir = u.HomeDir
	}
	ru.env = []string{"HOME=" + u.HomeDir, "USER=" + u.Username, "LOGNAME=" + u.Username, "PATH=" + cleanPath}
	return ru, nil
}
