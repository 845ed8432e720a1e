package member

import (
	"bytes"
	"log"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// memberlistLogger adapts zap to the *log.Logger memberlist takes. Its
// lines look like "[WARN] memberlist: message"; the tag becomes the zap
// level and the prefix is dropped. Lines written after close are
// discarded: memberlist's goroutines outlive its Shutdown a little, and
// the owner's logger may be gone by then.
func memberlistLogger(z *zap.Logger) (*log.Logger, func()) {
	w := &zapWriter{log: z.WithOptions(zap.AddCallerSkip(3)).With(zap.String("component", "memberlist"))}
	return log.New(w, "", 0), w.close
}

type zapWriter struct {
	log    *zap.Logger
	mu     sync.RWMutex
	closed bool
}

func (w *zapWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

func (w *zapWriter) Write(p []byte) (int, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return len(p), nil
	}
	line := bytes.TrimSpace(p)
	level := zapcore.InfoLevel
	if tag, rest, ok := bytes.Cut(line, []byte("] ")); ok && len(tag) > 0 && tag[0] == '[' {
		switch string(tag[1:]) {
		case "DEBUG":
			level, line = zapcore.DebugLevel, rest
		case "INFO":
			level, line = zapcore.InfoLevel, rest
		case "WARN":
			level, line = zapcore.WarnLevel, rest
		case "ERR", "ERROR":
			level, line = zapcore.ErrorLevel, rest
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	if ce := w.log.Check(level, string(line)); ce != nil {
		ce.Write()
	}
	return len(p), nil
}
