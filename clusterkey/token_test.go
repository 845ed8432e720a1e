package clusterkey

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestTokenRoundTrip(t *testing.T) {
	k := testKey(1)
	s, err := k.Mint(1001, 1002, t0, DefaultTTL, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Verify(s, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != 1001 || got.GID != 1002 || !got.Expires.Equal(t0.Add(DefaultTTL)) {
		t.Errorf("verified %+v", got)
	}
	s2, _ := k.Mint(1001, 1002, t0, DefaultTTL, rand.Reader)
	if s2 == s {
		t.Error("two minted tokens are identical: the nonce does not vary")
	}
}

func TestTokenRefused(t *testing.T) {
	k := testKey(1)
	s, _ := k.Mint(1001, 1002, t0, DefaultTTL, rand.Reader)
	tamper := func(i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	far, _ := k.Mint(0, 0, t0, MaxTTL+Skew+time.Minute, rand.Reader)
	cases := []struct {
		name  string
		token string
		key   *Key
		now   time.Time
		want  error
	}{
		{"other key", s, testKey(2), t0, ErrForged},
		{"tampered uid", tamper(len(tokenPrefix) + 3), k, t0, ErrForged},
		{"tampered mac", tamper(len(s) - 2), k, t0, ErrForged},
		{"expired", s, k, t0.Add(DefaultTTL + Skew + time.Second), ErrExpired},
		{"lives too long", far, k, t0, ErrMalformed},
		{"empty", "", k, t0, ErrMalformed},
		{"no prefix", s[len(tokenPrefix):], k, t0, ErrMalformed},
		{"truncated", s[:len(s)-4], k, t0, ErrMalformed},
		{"huge", tokenPrefix + strings.Repeat("A", 10000), k, t0, ErrMalformed},
		{"not base64", tokenPrefix + strings.Repeat("!", 86), k, t0, ErrMalformed},
	}
	for _, c := range cases {
		if _, err := c.key.Verify(c.token, c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify error %v, want %v", c.name, err, c.want)
		}
	}
	// Within the skew allowance an expired-by-the-clock token still passes.
	if _, err := k.Verify(s, t0.Add(DefaultTTL+Skew-time.Second)); err != nil {
		t.Errorf("token within the clock skew allowance refused: %v", err)
	}
}

func FuzzVerifyToken(f *testing.F) {
	k := testKey(1)
	s, _ := k.Mint(1001, 1002, t0, DefaultTTL, bytes.NewReader(make([]byte, 16)))
	f.Add(s)
	f.Add("")
	f.Add(tokenPrefix)
	f.Add(s[:len(s)-1] + "x")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := k.Verify(s, t0)
		if err != nil {
			return
		}
		// Whatever verifies re-encodes to the same bytes (no malleability).
		if again := k.Encode(tok); again != s {
			t.Fatalf("verified %q but it re-encodes as %q", s, again)
		}
	})
}
