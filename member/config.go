package member

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// Config configures Join. Start from DefaultLANConfig or
// DefaultLocalConfig and fill in the node's identity.
type Config struct {
	Name      string      // unique node name (≤ MaxNameLen bytes); also Meta.Name
	Bind      string      // host:port for gossip, TCP and UDP on the same port; port 0 picks one
	Advertise string      // IP the others reach this node's gossip at (default: Bind's host, or a private IP of this machine when Bind is 0.0.0.0)
	Join      []string    // gossip addresses of existing members; empty = first node of a cluster
	SecretKey []byte      // optional gossip encryption key: 16, 24 or 32 bytes (AES-128/192/256); every member needs the same
	Meta      Meta        // what the others learn about this node (≤ MaxMetaSize bytes encoded)
	Local     bool        // memberlist's DefaultLocalConfig timings (fast failure detection on loopback) instead of DefaultLANConfig
	Log       *zap.Logger // nil: no logging; memberlist's own log lines are routed here too

	JoinAttempts int           // rounds of trying every Join address; 0 = 3
	JoinBackoff  time.Duration // pause after the first failed round, doubling after each; 0 = 500ms
	EventBuffer  int           // capacity of the Events channel; 0 = 256
}

// DefaultLANConfig is for a cluster on a LAN: memberlist's LAN timings
// (probe every 1 s, suspicion ≈ 4·log(N+1) probes), gossip on all
// interfaces at port 7946.
func DefaultLANConfig() Config {
	return Config{
		Bind:         "0.0.0.0:7946",
		Local:        false,
		JoinAttempts: 3,                      // a member that starts a little later still answers
		JoinBackoff:  500 * time.Millisecond, // 0.5 s, 1 s: rides out a peer's restart
		EventBuffer:  256,                    // events are rare; the queue behind coalesces per member
	}
}

// DefaultLocalConfig is for a cluster of processes on one machine
// (tests, laptops, network namespaces): loopback, a port picked by the
// kernel, memberlist's local timings (failures noticed in a few seconds).
func DefaultLocalConfig() Config {
	return Config{
		Bind:         "127.0.0.1:0",
		Local:        true,
		JoinAttempts: 3,
		JoinBackoff:  100 * time.Millisecond,
		EventBuffer:  256,
	}
}

// check lists every problem with cfg, and returns cfg with its documented
// zero-value defaults filled in.
func (cfg Config) check() (Config, string, int, error) {
	var errs []error
	if cfg.Name == "" {
		errs = append(errs, errors.New("empty Name"))
	} else if len(cfg.Name) > MaxNameLen {
		errs = append(errs, fmt.Errorf("too long a Name: %d bytes (max %d)", len(cfg.Name), MaxNameLen))
	}
	if cfg.Meta.Name == "" {
		cfg.Meta.Name = cfg.Name
	} else if cfg.Meta.Name != cfg.Name {
		errs = append(errs, fmt.Errorf("conflicting Meta.Name %q and Name %q", cfg.Meta.Name, cfg.Name))
	}
	switch len(cfg.SecretKey) {
	case 0, 16, 24, 32:
	default:
		errs = append(errs, fmt.Errorf("bad SecretKey length %d (want 16, 24 or 32)", len(cfg.SecretKey)))
	}
	host, portStr, err := net.SplitHostPort(cfg.Bind)
	port := 0
	if err != nil {
		errs = append(errs, fmt.Errorf("bad Bind %q: %v", cfg.Bind, err))
	} else if port, err = strconv.Atoi(portStr); err != nil || port < 0 || port > 65535 {
		errs = append(errs, fmt.Errorf("bad Bind %q: port out of range", cfg.Bind))
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if cfg.Advertise != "" {
		if _, err := netip.ParseAddr(cfg.Advertise); err != nil {
			errs = append(errs, fmt.Errorf("bad Advertise %q: not an IP address", cfg.Advertise))
		}
	}
	if cfg.JoinAttempts < 0 || cfg.JoinBackoff < 0 || cfg.EventBuffer < 0 {
		errs = append(errs, errors.New("negative JoinAttempts, JoinBackoff or EventBuffer"))
	}
	if cfg.Name != "" && len(cfg.Name) <= MaxNameLen {
		if _, err := encodeMeta(cfg.Meta); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return cfg, "", 0, fmt.Errorf("member: member config: %w", errors.Join(errs...))
	}
	if cfg.JoinAttempts == 0 {
		cfg.JoinAttempts = 3
	}
	if cfg.JoinBackoff == 0 {
		cfg.JoinBackoff = 500 * time.Millisecond
	}
	if cfg.EventBuffer == 0 {
		cfg.EventBuffer = 256
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return cfg, host, port, nil
}
