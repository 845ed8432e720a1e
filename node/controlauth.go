package node

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/internal/ratelog"
)

// controlAuth authenticates the control connections between the
// controller and the agents with the cluster key (clusterkey.Link,
// purpose "control"): both ends prove they hold it before any frame is
// read, and the connection is then sealed. A nil *controlAuth (no key)
// leaves connections as they are. One is shared by an agent and the
// controllers it runs, so that /metrics counts both ends' refusals.
type controlAuth struct {
	link    *clusterkey.Link
	refused atomic.Uint64
	warn    *ratelog.Limiter
}

// controlHandshake bounds a control connection's TLS handshake.
const controlHandshake = 5 * time.Second

func newControlAuth(key *clusterkey.Key) (*controlAuth, error) {
	if key == nil {
		return nil, nil
	}
	l, err := key.Link("control")
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	return &controlAuth{link: l, warn: ratelog.New(10 * time.Second)}, nil
}

// server authenticates a connection the agent accepted.
func (ca *controlAuth) server(ctx context.Context, conn net.Conn, log *zap.Logger) (net.Conn, error) {
	if ca == nil {
		return conn, nil
	}
	tc, err := ca.link.Server(ctx, conn, controlHandshake)
	if err != nil {
		return nil, ca.refuse(ctx, log, conn, err)
	}
	return tc, nil
}

// client authenticates a connection the controller dialled.
func (ca *controlAuth) client(ctx context.Context, conn net.Conn, log *zap.Logger) (net.Conn, error) {
	if ca == nil {
		return conn, nil
	}
	tc, err := ca.link.Client(ctx, conn, controlHandshake)
	if err != nil {
		return nil, ca.refuse(ctx, log, conn, err)
	}
	return tc, nil
}

// refuse counts a failed handshake (unless the process is stopping) and
// logs it, at most once per 10 s: a peer without the key may keep trying.
func (ca *controlAuth) refuse(ctx context.Context, log *zap.Logger, conn net.Conn, err error) error {
	if ctx.Err() != nil {
		return err
	}
	ca.refused.Add(1)
	if ok, n := ca.warn.Allow(time.Now()); ok {
		log.Warn("control connection refused: the peer did not prove it holds the cluster key", zap.String("remote", conn.RemoteAddr().String()),
			zap.Error(err), zap.Int("similar warnings suppressed", n))
	}
	return err
}

// refusals is how many control connections were refused.
func (ca *controlAuth) refusals() uint64 {
	if ca == nil {
		return 0
	}
	return ca.refused.Load()
}
