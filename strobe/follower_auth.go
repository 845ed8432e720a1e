package strobe

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/mono"
)

// socket is one of a Follower's sockets as its receive loop sees it.
type socket struct {
	name string  // for log lines
	kind MsgType // what a forged packet there is counted as
	only MsgType // the one type accepted there (0: strobes and heartbeats)
	// windows are the replay windows of the senders heard from on this
	// socket, touched only by its receive loop.
	windows replayWindows
	buf     decodeBuf // what its loop decodes into (a strobe: valid until its next packet)
}

// open authenticates (with a key) and decodes a packet that came to sock.
// It drops, counts and logs whatever is not a message for sock; the error
// says why, the caller just skips the packet. Call it only from sock's
// receive loop; a Strobe returned is valid until its next call.
func (f *Follower) open(p Packet, sock *socket) (Message, error) {
	msg, err := f.cfg.Auth.open(p.Data, sock.windows, sock.only, &sock.buf)
	switch {
	case err == nil:
		return msg, nil
	case errors.Is(err, ErrForged):
		f.reject(p, sock, rejectKind{forged: true, typ: sock.kind}, err)
	case errors.Is(err, ErrReplayed):
		f.reject(p, sock, rejectKind{typ: msg.MsgType()}, err)
	default:
		f.drop(p, sock.name, err)
	}
	return nil, err
}

// rejectKind is one line of the forged and replayed counts.
type rejectKind struct {
	forged bool    // forged (else replayed)
	typ    MsgType // the message kind: by socket when forged (its content is not to be trusted), by content when replayed
}

// rejectLogEvery limits the warnings about forged and replayed packets to
// one a second per reason and kind: a forger must not flood the log (the
// counters count every packet).
const rejectLogEvery = time.Second

// logLimiter lets one line through per period and counts the rest.
type logLimiter struct {
	last       int64 // mono time of the last line let through
	suppressed uint64
}

// allow reports whether a line may be written at now, and how many were
// suppressed since the last one written.
func (l *logLimiter) allow(now int64, every time.Duration) (ok bool, suppressed uint64) {
	if l.last != 0 && now-l.last < int64(every) {
		l.suppressed++
		return false, 0
	}
	l.last, suppressed, l.suppressed = now, l.suppressed, 0
	return true, suppressed
}

// reject counts a forged or replayed packet and logs it, rate-limited.
func (f *Follower) reject(p Packet, sock *socket, k rejectKind, err error) {
	f.mu.Lock()
	var total uint64
	switch {
	case k.forged && k.typ == TypeStrobe:
		f.c.strobesForged++
		total = f.c.strobesForged
	case k.forged:
		f.c.hbForged++
		total = f.c.hbForged
	case k.typ == TypeStrobe:
		f.c.strobesReplayed++
		total = f.c.strobesReplayed
	default:
		f.c.hbReplayed++
		total = f.c.hbReplayed
	}
	l := f.rejectLogs[k]
	if l == nil {
		l = new(logLimiter)
		f.rejectLogs[k] = l
	}
	ok, suppressed := l.allow(mono.Now(), rejectLogEvery)
	f.mu.Unlock()
	if !ok {
		return
	}
	what := "replayed"
	if k.forged {
		what = "forged or unauthenticated"
	}
	f.log.Warn(fmt.Sprintf("strobe: dropped a %s %v", what, k.typ),
		zap.String("socket", sock.name), zap.String("from", p.From), zap.Error(err),
		zap.Uint64("total", total), zap.Uint64("suppressed_since_last_line", suppressed))
}
