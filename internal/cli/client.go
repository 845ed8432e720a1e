package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/localcluster"
)

// ClientFlags are the flags of the commands that talk to a cluster.
type ClientFlags struct {
	addr     string
	stateDir string
}

func (c *ClientFlags) Add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.addr, "addr", "", "any agent's API address host:port, or several separated by commas, tried in turn when one does not answer (default: $COSCHED_ADDR, else the local cluster of cluster up)")
	cmd.Flags().StringVar(&c.stateDir, "state-dir", "", StateDirHelp)
}

// StateDirHelp is the help of the clients' --state-dir.
const StateDirHelp = "state directory of cluster up (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched if it has a cluster, else " + localcluster.SystemStateDir + ")"

// client resolves the API address (--addr, COSCHED_ADDR, the local
// cluster) and the credential (see localcluster.Client).
func (c *ClientFlags) Client() (*api.Client, error) {
	cl, err := localcluster.Client(c.addr, c.stateDir)
	if errors.Is(err, localcluster.ErrNoCluster) {
		_, where, _ := strings.Cut(err.Error(), localcluster.ErrNoCluster.Error()+": ")
		return nil, fmt.Errorf("no cluster to talk to (%s): pass --addr or set COSCHED_ADDR, or start a local cluster with `cosched cluster up`", where)
	}
	return cl, addrError(err)
}

// ClientForAddr is a client of the agents at addr, a comma-separated
// list (--addr), with the credential localcluster.ClientForAddrs finds.
func ClientForAddr(addr, stateDir string) (*api.Client, error) {
	cl, err := localcluster.ClientForList(addr, stateDir)
	return cl, addrError(err)
}

// addrError names a bad address list by its flag, --addr.
func addrError(err error) error {
	if fs := fielderr.All(err); len(fs) == 1 && fs[0].Field == "Addrs" {
		return usageError{errors.New(fielderr.Format("--addr", fs[0]))}
	}
	return err
}
