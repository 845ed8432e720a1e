package localcluster

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/internal/fielderr"
)

// DefaultKeyFile is where the systemd and Slurm deployments keep the
// cluster key.
const DefaultKeyFile = "/etc/cosched/cluster.key"

// ClientForAddrs is a client of the agents at addrs (tried in turn) with a
// credential found without ceremony: the agent's Unix socket named by
// COSCHED_SOCKET (the kernel vouches for this process's uid); else, when
// addrs[0] is an agent of the local cluster recorded in stateDir, what
// that record offers (its Unix socket, else its key); else a token signed
// with the key file COSCHED_KEY_FILE, or DefaultKeyFile, when this process
// can read it; else none (an agent with a key answers 401 saying what to
// do).
func ClientForAddrs(addrs []string, stateDir string) (*api.Client, error) {
	if sock := os.Getenv("COSCHED_SOCKET"); sock != "" {
		return api.NewUnixClient(sock), nil
	}
	if stateDir != "" {
		if rec, err := Load(stateDir); err == nil && rec.Has(addrs[0]) {
			return rec.ClientFor(addrs[0]), nil
		}
	}
	if path := os.Getenv("COSCHED_KEY_FILE"); path != "" {
		k, err := clusterkey.Load(path)
		if err != nil {
			return nil, fmt.Errorf("COSCHED_KEY_FILE: %w", err)
		}
		return api.NewKeyClient(k, addrs[0], addrs[1:]...), nil
	}
	if k, err := clusterkey.Load(DefaultKeyFile); err == nil {
		return api.NewKeyClient(k, addrs[0], addrs[1:]...), nil
	}
	return api.NewClient(addrs[0], addrs[1:]...), nil
}

// ErrNoCluster is Client's error when it has no address and finds no
// local cluster.
var ErrNoCluster = errors.New("localcluster: no cluster to talk to")

// Client is a client of the agents at addrList, API addresses separated
// by commas and tried in turn (default: COSCHED_ADDR; without either, the
// agent's Unix socket COSCHED_SOCKET, else the local cluster recorded in
// stateDir, resolved by FindStateDir), with the credential ClientForAddrs
// finds. No record there is ErrNoCluster, naming where it looked; a record
// this user cannot read is an error naming the path and the cause.
func Client(addrList, stateDir string) (*api.Client, error) {
	addrList = cmp.Or(addrList, os.Getenv("COSCHED_ADDR"))
	dir, err := FindStateDir(stateDir)
	if addrList != "" {
		return ClientForList(addrList, dir)
	}
	if sock := os.Getenv("COSCHED_SOCKET"); sock != "" {
		return api.NewUnixClient(sock), nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := Load(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && stateDir == "" && os.Getenv("COSCHED_STATE_DIR") == "":
		return nil, fmt.Errorf("%w: no cluster record in %s", ErrNoCluster, searched())
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: no cluster record in %s", ErrNoCluster, dir)
	case err != nil:
		return nil, fmt.Errorf("localcluster: the cluster record: %w", err)
	}
	return rec.Client(), nil
}

// searched lists the state directories FindStateDir looks in without a
// flag or COSCHED_STATE_DIR.
func searched() string {
	if own, err := userStateDir(); err == nil && own != SystemDir() {
		return own + " or " + SystemDir()
	}
	return SystemDir()
}

// ClientForList is ClientForAddrs of addrList, addresses separated by
// commas; an empty one is a *fielderr.Error keyed "Addrs".
func ClientForList(addrList, stateDir string) (*api.Client, error) {
	addrs := strings.Split(addrList, ",")
	for i, a := range addrs {
		if addrs[i] = strings.TrimSpace(a); addrs[i] == "" {
			return nil, fielderr.New("Addrs", strconv.Quote(addrList), "empty address in the list")
		}
	}
	return ClientForAddrs(addrs, stateDir)
}
