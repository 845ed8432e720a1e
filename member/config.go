package member

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
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

	// Failure detection (memberlist's SWIM with Lifeguard), set by the
	// presets for nodes whose processors are busy with ranks: a live
	// member that answers late must not be declared dead, a dead one is
	// still declared within DetectionBound. 0 keeps memberlist's own
	// value for the preset (DefaultLANConfig's or DefaultLocalConfig's).
	ProbeInterval  time.Duration // how often this node probes one member
	ProbeTimeout   time.Duration // how long it waits for the direct ack before asking IndirectChecks others
	IndirectChecks int           // members asked to probe for it when the direct probe fails
	// SuspicionMult scales a suspect's time to refute, in probe
	// intervals × log10(members), and SuspicionMaxTimeoutMult the
	// longest that gets before other members confirm the suspicion.
	SuspicionMult           int
	SuspicionMaxTimeoutMult int
	// AwarenessMaxMultiplier bounds how far a node that itself misses
	// acks (it is the slow one) stretches its probe interval and timeout.
	AwarenessMaxMultiplier int

	// Heard, if set, is evidence of life from outside gossip: how long
	// ago this node last heard from the named member by other means (the
	// slice protocol's heartbeats), ok false if never. A member that
	// gossip declares dead while it was heard within HeardWindow is busy,
	// not dead: it stays in Members and its EventLeave is held. The hold
	// ends when gossip takes it back (it refutes its death as soon as it
	// gets the processor: the leave is withdrawn, the consumer sees an
	// EventUpdate) or when HeardWindow passes without a word from it (the
	// leave goes out). A member that dies is heard no more, so its leave
	// goes out by the later of gossip's verdict and its last heartbeat +
	// HeardWindow: DetectionBound still holds when HeardWindow is below
	// it. A member that leaves gracefully while heard is held the same
	// way (memberlist does not tell a leave from a death). Called from
	// memberlist's goroutines and the Membership's: it must not block.
	Heard       func(name string) (ago time.Duration, ok bool)
	HeardWindow time.Duration // 0 = DefaultHeardWindow

	JoinAttempts int           // rounds of trying every Join address; 0 = 3
	JoinBackoff  time.Duration // pause after the first failed round, doubling after each; 0 = 500ms
	EventBuffer  int           // capacity of the Events channel; 0 = 256
}

// DefaultLANConfig is for a cluster on a LAN: memberlist's LAN timings
// (probe every 1 s, a 500 ms ack timeout, 3 indirect probes, suspicion
// 4·max(1, log10 N) probe intervals, up to 6 times that unconfirmed),
// gossip on all interfaces at port 7946.
func DefaultLANConfig() Config {
	return Config{
		Bind:                    "0.0.0.0:7946",
		Local:                   false,
		ProbeInterval:           time.Second,
		ProbeTimeout:            500 * time.Millisecond,
		IndirectChecks:          3,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 6,
		AwarenessMaxMultiplier:  8,
		JoinAttempts:            3,                      // a member that starts a little later still answers
		JoinBackoff:             500 * time.Millisecond, // 0.5 s, 1 s: rides out a peer's restart
		EventBuffer:             256,                    // events are rare; the queue behind coalesces per member
	}
}

// DefaultLocalConfig is for a cluster of processes on one machine
// (tests, laptops, network namespaces): loopback, a port picked by the
// kernel, and failure detection for a host whose processors are all busy
// (memberlist's local preset, with its 200 ms ack timeout, one indirect
// probe and a short unconfirmed suspicion, declared live agents dead on a
// 2-core host running 32 of them beside busy ranks): the LAN preset's
// ack timeout and indirect probes, a suspicion 4·max(1, log10 N) probe
// intervals long, up to 3 times that unconfirmed (DetectionBound).
func DefaultLocalConfig() Config {
	return Config{
		Bind:                    "127.0.0.1:0",
		Local:                   true,
		ProbeInterval:           time.Second,
		ProbeTimeout:            500 * time.Millisecond,
		IndirectChecks:          3,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 3,
		AwarenessMaxMultiplier:  8,
		JoinAttempts:            3,
		JoinBackoff:             100 * time.Millisecond,
		EventBuffer:             256,
	}
}

// DefaultHeardWindow is how recently a member must have been heard (Config.Heard)
// for gossip's verdict of death to be held: longer than a busy node's
// pauses between heartbeats (the strobe thread runs at real-time
// priority; its heartbeat sender does not), well below the suspicion
// that precedes a death (4 probe intervals at least), so a killed
// member, silent since its death, is not held at all.
const DefaultHeardWindow = 2 * time.Second

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
	if cfg.ProbeInterval < 0 || cfg.ProbeTimeout < 0 || cfg.IndirectChecks < 0 || cfg.SuspicionMult < 0 || cfg.SuspicionMaxTimeoutMult < 0 || cfg.AwarenessMaxMultiplier < 0 {
		errs = append(errs, errors.New("negative ProbeInterval, ProbeTimeout, IndirectChecks, SuspicionMult, SuspicionMaxTimeoutMult or AwarenessMaxMultiplier"))
	} else if cfg.ProbeInterval > 0 && cfg.ProbeTimeout >= cfg.ProbeInterval {
		errs = append(errs, fmt.Errorf("ProbeTimeout %v not below ProbeInterval %v", cfg.ProbeTimeout, cfg.ProbeInterval))
	}
	if cfg.JoinAttempts < 0 || cfg.JoinBackoff < 0 || cfg.EventBuffer < 0 || cfg.HeardWindow < 0 {
		errs = append(errs, errors.New("negative JoinAttempts, JoinBackoff, EventBuffer or HeardWindow"))
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
	if cfg.HeardWindow == 0 {
		cfg.HeardWindow = DefaultHeardWindow
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return cfg, host, port, nil
}

// DetectionBound is the longest a member that dies without a word (kill
// -9, a lost host) stays in the others' member lists with cfg's timings
// among n members, as long as the survivors are not themselves slowed
// (Lifeguard's awareness stretches the probes of a slow prober by up to
// AwarenessMaxMultiplier): each survivor probes one member a
// ProbeInterval, so the dead one is probed within n intervals at worst
// (in one on average, when every survivor probes); then it is suspected
// for at most SuspicionMaxTimeoutMult × SuspicionMult × max(1, log10 n)
// intervals (less as others confirm), and the verdict is gossiped within
// a few gossip rounds, counted here as one more interval.
func (cfg Config) DetectionBound(n int) time.Duration {
	c := cfg.withPresetTimings()
	scale := max(1, math.Log10(float64(max(n, 1))))
	suspicion := time.Duration(float64(c.SuspicionMaxTimeoutMult*c.SuspicionMult) * scale * float64(c.ProbeInterval))
	return time.Duration(n+1)*c.ProbeInterval + c.ProbeTimeout + suspicion
}

// withPresetTimings fills cfg's zero timings with memberlist's preset's.
func (cfg Config) withPresetTimings() Config {
	mc := memberlist.DefaultLANConfig()
	if cfg.Local {
		mc = memberlist.DefaultLocalConfig()
	}
	cfg.ProbeInterval = cmp.Or(cfg.ProbeInterval, mc.ProbeInterval)
	cfg.ProbeTimeout = cmp.Or(cfg.ProbeTimeout, mc.ProbeTimeout)
	cfg.IndirectChecks = cmp.Or(cfg.IndirectChecks, mc.IndirectChecks)
	cfg.SuspicionMult = cmp.Or(cfg.SuspicionMult, mc.SuspicionMult)
	cfg.SuspicionMaxTimeoutMult = cmp.Or(cfg.SuspicionMaxTimeoutMult, mc.SuspicionMaxTimeoutMult)
	cfg.AwarenessMaxMultiplier = cmp.Or(cfg.AwarenessMaxMultiplier, mc.AwarenessMaxMultiplier)
	return cfg
}
