// Package testuser creates a real Unix user for a test (useradd, removed
// with userdel when the test ends): the tests of jobs that run as their
// submitter, of clusters other users share. It skips the test, saying
// why, where that is impossible (not root, no useradd).
package testuser

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"testing"
)

// User is a user made for a test.
type User struct {
	Name     string
	UID, GID uint32
}

// Add creates a user with a fresh name starting with prefix (a few
// letters), its own group and no home directory (HOME /nonexistent), and
// removes it when t ends.
func Add(t testing.TB, prefix string) User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates a Unix user")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd not installed (Debian's passwd package)")
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", "/nonexistent", "--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return User{Name: name, UID: uint32(uid), GID: uint32(gid)}
}
