package node

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cosched/cosched/internal/fielderr"
)

// ParseCPUList reads a list of CPU numbers and ranges, "0-3,8,10-11"
// (Config.CPUs), dropping repeats.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q: want CPU numbers or ranges like 0-3,8", part)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no CPU given")
	}
	return out, nil
}

// ParseSecretKey reads a gossip encryption key (Config.SecretKey) in hex:
// 32, 48 or 64 digits.
func ParseSecretKey(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		return nil, errors.New("odd number of hex digits")
	}
	key := make([]byte, len(s)/2)
	for i := range key {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("not hex at %q", s[2*i:2*i+2])
		}
		key[i] = byte(v)
	}
	if l := len(key); l != 16 && l != 24 && l != 32 {
		return nil, fmt.Errorf("%d bytes, want 16, 24 or 32 (32, 48 or 64 hex digits)", l)
	}
	return key, nil
}

// NewLogger is an agent's logger: level debug, info, warn or error, format
// console or json; no sampling and no stack traces (a daemon's errors are
// reports, not crashes). A bad setting is an error keyed by field
// (LogLevel, LogFormat).
func NewLogger(level, format string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(level); err != nil {
		return nil, fielderr.New("LogLevel", strconv.Quote(level), "want debug, info, warn or error")
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	cfg.DisableStacktrace = true // a daemon's errors are reports, not crashes (memberlist logs rejected packets as errors)
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	switch format {
	case "json":
	case "console":
		cfg.Encoding = "console"
	default:
		return nil, fielderr.New("LogFormat", strconv.Quote(format), "want console or json")
	}
	return cfg.Build()
}
