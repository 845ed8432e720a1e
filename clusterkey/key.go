package clusterkey

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Size is a key's length in bytes.
const Size = 32

// maxFile bounds what Load reads: a hex key with a newline and some slack.
const maxFile = 2*Size + 64

// Key is a cluster key. Its zero value is not a key: use Parse, Load or
// Generate.
type Key struct {
	b [Size]byte
	// macs holds keyed HMAC states for reuse (pooledMAC): a new one
	// costs two SHA-256 blocks and seven allocations, about half of
	// opening a strobe.
	macs sync.Pool
}

// Parse reads a key as a file holds it: 32 raw bytes, or 64 hex digits
// with optional surrounding white space.
func Parse(data []byte) (*Key, error) {
	var k Key
	if len(data) == Size {
		copy(k.b[:], data)
		return &k, nil
	}
	t := bytes.TrimSpace(data)
	if len(t) != 2*Size {
		return nil, fmt.Errorf("%d bytes: want %d raw bytes or %d hex digits", len(data), Size, 2*Size)
	}
	if _, err := hex.Decode(k.b[:], t); err != nil {
		return nil, fmt.Errorf("not %d hex digits: %w", 2*Size, err)
	}
	return &k, nil
}

// New makes a key from rand (crypto/rand.Reader in production).
func New(rand io.Reader) (*Key, error) {
	var k Key
	if _, err := io.ReadFull(rand, k.b[:]); err != nil {
		return nil, fmt.Errorf("reading random bytes: %w", err)
	}
	return &k, nil
}

// Load reads the key file at path. It refuses a file that is not a
// regular file, that its group or others may read or write (mode looser
// than 0600), or that does not hold a key; the error names the file.
func Load(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s: not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s: mode %#o lets others read it; want 0600 or stricter (chmod 600 %s)", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("key file %s: larger than %d bytes; want %d raw bytes or %d hex digits", path, maxFile, Size, 2*Size)
	}
	k, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// Generate writes a new random key, as hex, to a new file at path with
// mode 0600. It refuses to overwrite an existing file.
func Generate(path string) (*Key, error) {
	k, err := New(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(k.b[:]) + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return nil, fmt.Errorf("key file %s: %w", path, werr)
	}
	return k, nil
}

// LoadOrGenerate loads the key file at path, generating it first if it
// does not exist.
func LoadOrGenerate(path string) (*Key, error) {
	k, err := Generate(path)
	if errors.Is(err, os.ErrExist) {
		return Load(path)
	}
	return k, err
}

// Derive returns a 32-byte secret for one purpose ("gossip", …), so one
// key file can configure several mechanisms without reusing the same
// secret in two of them.
func (k *Key) Derive(purpose string) []byte {
	return k.mac([]byte("cosched derive "+purpose), nil)
}

// macState is a keyed HMAC state with room for its sum: the sum is
// written there, not into the caller's dst, which would make every dst
// escape to the heap (hash.Hash.Sum is an interface call).
type macState struct {
	h   hash.Hash
	sep [1]byte // the 0 between label and data
	sum [sha256.Size]byte
}

// pooledMAC appends to dst what mac returns, with a keyed state from the
// pool: safe for concurrent use, and without allocation in steady state.
func (k *Key) pooledMAC(dst, label, data []byte) []byte {
	m, ok := k.macs.Get().(*macState)
	if !ok {
		m = &macState{h: hmac.New(sha256.New, k.b[:])}
	}
	dst = m.mac(dst, label, data)
	k.macs.Put(m)
	return dst
}

// mac appends to dst the MAC of the domain label and then data.
func (m *macState) mac(dst, label, data []byte) []byte {
	m.h.Reset()
	m.h.Write(label)
	m.h.Write(m.sep[:])
	m.h.Write(data)
	return append(dst, m.h.Sum(m.sum[:0])...)
}

// mac is HMAC-SHA256 of the domain label and then data.
func (k *Key) mac(label, data []byte) []byte {
	h := hmac.New(sha256.New, k.b[:])
	h.Write(label)
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)
}
