package clusterkey

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Token is what a credential asserts: who (a uid and a gid) and until when.
type Token struct {
	UID     uint32
	GID     uint32
	Expires time.Time // whole seconds
	Nonce   [16]byte  // makes every minted token unique
}

// Token lifetimes and clock tolerance.
const (
	// DefaultTTL is how long a minted token lives: long enough for a
	// request to cross a loaded cluster, short enough that a leaked
	// one is soon useless (MUNGE's default is 300 s).
	DefaultTTL = 60 * time.Second
	// MaxTTL bounds what Verify accepts: a token claiming to live longer
	// was not minted by cosched.
	MaxTTL = 10 * time.Minute
	// Skew is the clock difference between nodes that Verify tolerates.
	Skew = 30 * time.Second
)

const (
	tokenPrefix  = "c1."
	tokenPayload = 4 + 4 + 8 + 16
	tokenMACSize = 32
	// MaxTokenLen bounds a token's text; longer input is refused before
	// it is decoded.
	MaxTokenLen = 128
)

var tokenLabel = []byte("cosched token v1")

// Errors from Verify; the message a server answers with depends on which.
var (
	ErrMalformed = errors.New("malformed credential")
	ErrForged    = errors.New("credential not signed with this cluster's key")
	ErrExpired   = errors.New("credential expired")
)

// Mint signs a token for uid and gid living ttl from now, with a nonce
// from rand.
func (k *Key) Mint(uid, gid uint32, now time.Time, ttl time.Duration, rand io.Reader) (string, error) {
	t := Token{UID: uid, GID: gid, Expires: now.Add(ttl).Truncate(time.Second)}
	if _, err := io.ReadFull(rand, t.Nonce[:]); err != nil {
		return "", fmt.Errorf("token nonce: %w", err)
	}
	return k.Encode(t), nil
}

// Encode signs t.
func (k *Key) Encode(t Token) string {
	b := make([]byte, tokenPayload, tokenPayload+tokenMACSize)
	binary.BigEndian.PutUint32(b[0:], t.UID)
	binary.BigEndian.PutUint32(b[4:], t.GID)
	binary.BigEndian.PutUint64(b[8:], uint64(t.Expires.Unix()))
	copy(b[16:], t.Nonce[:])
	b = append(b, k.mac(tokenLabel, b)...)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Verify checks a token's signature and lifetime at now and returns what
// it asserts. Errors wrap ErrMalformed, ErrForged or ErrExpired.
func (k *Key) Verify(s string, now time.Time) (Token, error) {
	var t Token
	if len(s) > MaxTokenLen {
		return t, fmt.Errorf("%w: longer than %d characters", ErrMalformed, MaxTokenLen)
	}
	body, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return t, fmt.Errorf("%w: does not start with %q", ErrMalformed, tokenPrefix)
	}
	// The length check comes first: the decoder skips newlines, which
	// would let many strings carry one token.
	if len(body) != base64.RawURLEncoding.EncodedLen(tokenPayload+tokenMACSize) {
		return t, fmt.Errorf("%w: want %d base64url-encoded bytes", ErrMalformed, tokenPayload+tokenMACSize)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil || len(b) != tokenPayload+tokenMACSize {
		return t, fmt.Errorf("%w: want %d base64url-encoded bytes", ErrMalformed, tokenPayload+tokenMACSize)
	}
	if !hmac.Equal(k.mac(tokenLabel, b[:tokenPayload]), b[tokenPayload:]) {
		return t, ErrForged
	}
	t.UID = binary.BigEndian.Uint32(b[0:])
	t.GID = binary.BigEndian.Uint32(b[4:])
	exp := int64(binary.BigEndian.Uint64(b[8:]))
	copy(t.Nonce[:], b[16:])
	nowSec := now.Unix()
	switch {
	case exp < nowSec-int64(Skew/time.Second):
		return t, fmt.Errorf("%w %v ago", ErrExpired, time.Duration(nowSec-exp)*time.Second)
	case exp > nowSec+int64((MaxTTL+Skew)/time.Second):
		return t, fmt.Errorf("%w: expires more than %v from now", ErrMalformed, MaxTTL+Skew)
	}
	t.Expires = time.Unix(exp, 0)
	return t, nil
}
