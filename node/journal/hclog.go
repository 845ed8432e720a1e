package journal

import (
	"bytes"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
)

// newRaftLogger gives raft (which logs through hclog) a logger that writes
// to zap, at the level raft chose for each line.
func newRaftLogger(log *zap.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Info,
		Output:      zapWriter{log: log.Named("raft")},
		DisableTime: true,
	})
}

// zapWriter receives hclog's formatted lines ("[WARN]  raft: message:
// key=value") one Write at a time.
type zapWriter struct{ log *zap.Logger }

func (w zapWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	switch {
	case bytes.HasPrefix(p, []byte("[ERROR]")):
		w.log.Error(line)
	case bytes.HasPrefix(p, []byte("[WARN]")):
		w.log.Warn(line)
	case bytes.HasPrefix(p, []byte("[DEBUG]")), bytes.HasPrefix(p, []byte("[TRACE]")):
		w.log.Debug(line)
	default:
		w.log.Info(line)
	}
	return len(p), nil
}
