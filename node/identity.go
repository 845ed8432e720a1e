package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/ui"
)

// Caller is who made an API request, as the agent established it.
type Caller struct {
	UID, GID uint32
	// Via says how: "unix socket" (the kernel's SO_PEERCRED), "token"
	// (signed with the cluster key), "session" (a web page's cookie,
	// viaSession), or "unauthenticated" (the agent has no cluster key and
	// takes every caller for its own user).
	Via string
}

// viaSession is Caller.Via for a web page's session cookie (package ui).
const viaSession = "session"

// APISocketName is the agent's API Unix socket, in its state directory.
const APISocketName = "api.sock"

type peerKey struct{}
type callerKey struct{}

// connContext records the kernel's word on who is at the other end of a
// Unix-socket connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, Caller{UID: cred.Uid, GID: cred.Gid, Via: "unix socket"})
}

// authenticate establishes the caller of every request but /metrics
// (Prometheus scrapes it; it holds counters, no job details), unless
// /metrics has a listener of its own (Config.MetricsListen), and hands it
// to next in the request's context; it answers 401 itself.
func (a *Agent) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path == "/metrics" && a.metricsSrv == nil) || r.URL.Path == ui.LoginPath {
			// The login link carries its own credential, spent there.
			next.ServeHTTP(w, r)
			return
		}
		c, err := a.callerOf(r)
		if err != nil {
			a.authFailures.Inc()
			w.Header().Set("WWW-Authenticate", api.AuthScheme)
			api.WriteError(w, http.StatusUnauthorized, err.Error())
			return
		}
		if c.Via == viaSession && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(ui.CSRFHeader) == "" {
			// A browser sends the cookie with any site's form; only the
			// page's own script sets this header.
			a.authDenials.Inc()
			api.WriteError(w, http.StatusForbidden, fmt.Sprintf("%s %s with a session cookie needs the %s header (the web page sets it)", r.Method, r.URL.Path, ui.CSRFHeader))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func (a *Agent) callerOf(r *http.Request) (Caller, error) {
	if c, ok := r.Context().Value(peerKey{}).(Caller); ok {
		return c, nil
	}
	if ck, err := r.Cookie(ui.CookieName(r.Host)); err == nil && a.ui != nil && r.Header.Get("Authorization") == "" {
		if who, ok := a.ui.sessions.Lookup(ck.Value); ok {
			return Caller{UID: who.UID, GID: who.GID, Via: viaSession}, nil
		}
		if a.cfg.Key != nil {
			return Caller{}, errors.New("web session unknown or expired (the agent may have restarted): run `cosched ui --url` for a fresh link")
		}
	}
	if a.cfg.Key == nil {
		return Caller{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid()), Via: "unauthenticated"}, nil
	}
	const help = "run cosched on a cluster node as yourself (it uses the agent's Unix socket), or let it sign a token with the cluster key (COSCHED_KEY_FILE, readable by you); see docs/security.md"
	h := r.Header.Get("Authorization")
	if h == "" {
		return Caller{}, errors.New("no credential: " + help)
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, api.AuthScheme) {
		return Caller{}, fmt.Errorf("credential: want \"Authorization: %s <token>\"; %s", api.AuthScheme, help)
	}
	t, err := a.cfg.Key.Verify(strings.TrimSpace(tok), time.Now())
	switch {
	case errors.Is(err, clusterkey.ErrExpired):
		return Caller{}, fmt.Errorf("%v: get a fresh one (the CLI mints one per request; if it just did, compare this node's clock with yours)", err)
	case errors.Is(err, clusterkey.ErrForged):
		return Caller{}, fmt.Errorf("%v: this cluster's agents share another key file; use theirs", err)
	case err != nil:
		return Caller{}, fmt.Errorf("%v; %s", err, help)
	}
	return Caller{UID: t.UID, GID: t.GID, Via: "token"}, nil
}

// caller is the request's authenticated caller (authenticate put it there).
func caller(r *http.Request) Caller {
	c, _ := r.Context().Value(callerKey{}).(Caller)
	return c
}

// token signs c for a request this agent forwards or makes on c's behalf;
// "" without a cluster key.
func (a *Agent) token(c Caller) string {
	if a.cfg.Key == nil {
		return ""
	}
	t, err := a.cfg.Key.Mint(c.UID, c.GID, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	if err != nil {
		a.log.Error("minting a token", zap.Error(err))
		return ""
	}
	return t
}

// self is the agent's own identity, for its calls to other agents.
func (a *Agent) self() Caller {
	return Caller{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid()), Via: "agent"}
}

// ownerOf names the caller as a job's owner.
func ownerOf(c Caller) api.Owner {
	o := api.Owner{UID: c.UID, GID: c.GID, User: strconv.FormatUint(uint64(c.UID), 10)}
	if u, err := user.LookupId(o.User); err == nil {
		o.User = u.Username
	}
	if g, err := user.LookupGroupId(strconv.FormatUint(uint64(c.GID), 10)); err == nil {
		o.Group = g.Name
	}
	return o
}

// isOperator reports whether c may act on every user's jobs: root, or a
// member of the admin group.
func (a *Agent) isOperator(c Caller) bool {
	if c.UID == 0 {
		return true
	}
	if a.cfg.AdminGID == nil {
		return false
	}
	if c.GID == *a.cfg.AdminGID {
		return true
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(c.UID), 10))
	if err != nil {
		return false
	}
	gids, err := u.GroupIds()
	return err == nil && slices.Contains(gids, strconv.FormatUint(uint64(*a.cfg.AdminGID), 10))
}

// mayAccess reports whether c may see the details of, and cancel, a job
// owned by o.
func (a *Agent) mayAccess(c Caller, o *api.Owner) bool {
	return (o != nil && o.UID == c.UID) || a.isOperator(c)
}

// forbidden answers 403 for a job c may not touch.
func (a *Agent) forbidden(w http.ResponseWriter, id int64, o *api.Owner, what string) {
	who := "no recorded owner"
	if o != nil {
		who = o.User
	}
	a.authDenials.Inc()
	api.WriteError(w, http.StatusForbidden, fmt.Sprintf("job %d belongs to %s: only its owner or an operator (root%s) may %s it", id, who, a.adminGroupNote(), what))
}

func (a *Agent) adminGroupNote() string {
	if a.cfg.AdminGID == nil {
		return ""
	}
	name := strconv.FormatUint(uint64(*a.cfg.AdminGID), 10)
	if g, err := user.LookupGroupId(name); err == nil {
		name = g.Name
	}
	return ", or a member of group " + name
}

// mayRunAs reports why this agent cannot run a job as o ("" if it can):
// only root can start processes as another user.
func mayRunAs(o api.Owner) string {
	euid := os.Geteuid()
	if euid == 0 || uint32(euid) == o.UID {
		return ""
	}
	name := strconv.Itoa(euid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return fmt.Sprintf("this cluster's agents run as %s, not root: they run jobs only for %s (ask the operator to run them as root to serve every user)", name, name)
}

// listenAPISocket opens the API's Unix socket: any local user may connect
// (the kernel tells the agent who they are).
func listenAPISocket(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("API socket: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	return ln, nil
}
