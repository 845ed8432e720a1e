package clusterkey

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "cluster.key")
	k, err := Generate(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("generated key file mode %#o, want 0600", st.Mode().Perm())
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.b != k.b {
		t.Error("loaded key differs from the generated one")
	}
	if _, err := Generate(path); err == nil {
		t.Error("Generate overwrote an existing key file")
	}
	again, err := LoadOrGenerate(path)
	if err != nil || again.b != k.b {
		t.Errorf("LoadOrGenerate on an existing file: %v (same key: %v)", err, err == nil && again.b == k.b)
	}
}

func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	raw := bytes.Repeat([]byte{7}, Size)
	cases := []struct {
		name string
		data []byte
		mode os.FileMode
		want string
	}{
		{"group-readable", []byte(hex.EncodeToString(raw)), 0o640, "mode 0640"},
		{"world-readable", raw, 0o604, "mode 0604"},
		{"short", raw[:31], 0o600, "31 bytes"},
		{"long", bytes.Repeat([]byte{'a'}, 200), 0o600, "larger than"},
		{"not hex", bytes.Repeat([]byte{'z'}, 64), 0o600, "hex"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.data, c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load error %v, want one naming %s and saying %q", c.name, err, path, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing file: %v", err)
	}
	for _, ok := range [][]byte{raw, []byte(hex.EncodeToString(raw) + "\n")} {
		path := filepath.Join(dir, "ok")
		os.Remove(path)
		if err := os.WriteFile(path, ok, 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := Load(path)
		if err != nil || !bytes.Equal(k.b[:], raw) {
			t.Errorf("valid key file (%d bytes): %v", len(ok), err)
		}
	}
}

func TestDeriveSeparatesPurposes(t *testing.T) {
	k := testKey(1)
	a, b := k.Derive("gossip"), k.Derive("relay")
	if len(a) != 32 || bytes.Equal(a, b) || bytes.Equal(a, k.b[:]) {
		t.Errorf("derived secrets: %x %x", a, b)
	}
	if !bytes.Equal(a, testKey(1).Derive("gossip")) {
		t.Error("Derive is not deterministic")
	}
}

func testKey(fill byte) *Key {
	k, err := Parse(bytes.Repeat([]byte{fill}, Size))
	if err != nil {
		panic(err)
	}
	return k
}
