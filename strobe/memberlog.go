package strobe

import (
	"bytes"
	"log"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// memberlistLogger adapts zap to the *log.Logger memberlist takes. Its
// lines look like "[WARN] memberlist: message"; the tag becomes the zap
// level and the prefix is dropped.
func memberlistLogger(z *zap.Logger) *log.Logger {
	return log.New(zapWriter{z.WithOptions(zap.AddCallerSkip(3)).With(zap.String("component", "memberlist"))}, "", 0)
}

type zapWriter struct{ log *zap.Logger }

func (w zapWriter) Write(p []byte) (int, error) {
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
