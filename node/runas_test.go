package node_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// testUser is a user (and its own group) the test creates.
type testUser struct {
	name     string
	uid, gid uint32
}

// addUser creates a user named i14<random> with a supplementary group
// extra (when not ""), and removes it when the test ends.
func addUser(t *testing.T, extra string) testUser {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name := "i14" + hex.EncodeToString(b)
	args := []string{"--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh", "--user-group"}
	if extra != "" {
		args = append(args, "--groups", extra)
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return testUser{name: name, uid: uint32(uid), gid: uint32(gid)}
}

func addGroup(t *testing.T) (string, uint32) {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name := "i14g" + hex.EncodeToString(b)
	if out, err := exec.Command("groupadd", name).CombinedOutput(); err != nil {
		t.Fatalf("groupadd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("groupdel", name).Run() })
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.ParseUint(g.Gid, 10, 32)
	return name, uint32(gid)
}

// worldDir is a directory every user may enter and write. (The rank
// shim, testShim, is in one every user may enter too.)
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "i14-auth-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// worldExe copies this test binary into dir, where every user may run it
// as a rank's program (TestMain's comm scenarios).
func worldExe(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "node.test")
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// procStatus returns the fields of /proc/<pid>/status named in names.
func procStatus(t *testing.T, pid int, names ...string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if slices.Contains(names, k) {
			out[k] = strings.Fields(v)
		}
	}
	return out
}

// A root agent runs a user's ranks as that user (real and effective uid
// and gid, supplementary groups), in the directory they gave, with a clean
// environment; another user's cancel is refused and the job runs on.
func TestRanksRunAsSubmitter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates users and runs ranks as them")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd not installed")
	}
	group, extraGID := addGroup(t)
	alice := addUser(t, group)
	bob := addUser(t, "")
	dir := worldDir(t)
	t.Setenv("I14_AGENT_ONLY", "secret") // the agent's environment must not reach the ranks
	key := newKey(t)
	c := startCluster(t, clusterOpts{agents: 1, processors: 1, mode: sharing.Gang, mpl: 2, key: key})
	ctx := context.Background()
	as := func(u testUser) *api.Client {
		tok, err := key.Mint(u.uid, u.gid, time.Now(), clusterkey.DefaultTTL, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tokenClient(c.agents[0].APIAddr(), tok)
	}

	id, err := as(alice).Submit(ctx, api.JobSpec{Command: []string{"sleep", "1000"}, Processors: 1,
		TimeLimit: api.Duration{D: time.Minute}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pid := c.waitExec(id, 1, "sleep")[0]
	st := procStatus(t, pid, "Uid", "Gid", "Groups")
	wantUID, wantGID := strconv.Itoa(int(alice.uid)), strconv.Itoa(int(alice.gid))
	if u := st["Uid"]; len(u) != 4 || u[0] != wantUID || u[1] != wantUID || u[2] != wantUID || u[3] != wantUID {
		t.Errorf("rank uids (real, effective, saved, fs) %v, want all %s", u, wantUID)
	}
	if g := st["Gid"]; len(g) != 4 || g[0] != wantGID || g[1] != wantGID || g[2] != wantGID || g[3] != wantGID {
		t.Errorf("rank gids %v, want all %s", g, wantGID)
	}
	if g := st["Groups"]; !slices.Contains(g, strconv.Itoa(int(extraGID))) || slices.Contains(g, "0") {
		t.Errorf("rank groups %v, want %d (%s) and not root's", g, extraGID, group)
	}
	if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); cwd != dir {
		t.Errorf("rank working directory %s, want %s", cwd, dir)
	}
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	vars := strings.Split(string(env), "\x00")
	for _, want := range []string{"USER=" + alice.name, "LOGNAME=" + alice.name, "HOME=/nonexistent", "PATH=/usr/local/bin:/usr/bin:/bin", "COSCHED_JOB=" + strconv.FormatInt(id, 10)} {
		if !slices.Contains(vars, want) {
			t.Errorf("rank environment lacks %s: %q", want, vars)
		}
	}
	if strings.Contains(string(env), "I14_AGENT_ONLY") {
		t.Errorf("the agent's environment reached the rank: %q", vars)
	}

	// Bob may not cancel Alice's job, nor see it; it keeps running.
	err = as(bob).Cancel(ctx, id)
	wantStatus(t, "bob cancels alice's job", err, http.StatusForbidden, "belongs to "+alice.name)
	_, err = as(bob).Job(ctx, id)
	wantStatus(t, "bob reads alice's job", err, http.StatusForbidden, "belongs to "+alice.name)
	time.Sleep(100 * time.Millisecond)
	if j, err := as(alice).Job(ctx, id); err != nil || j.State != api.Running || j.Spec.Owner == nil || j.Spec.Owner.User != alice.name {
		t.Errorf("after bob's cancel: %+v %v, want alice's job running", j, err)
	}
	if st := procStatus(t, pid, "State"); len(st["State"]) == 0 {
		t.Errorf("rank %d gone after bob's refused cancel", pid)
	}
	if err := as(alice).Cancel(ctx, id); err != nil {
		t.Fatalf("alice's cancel: %v", err)
	}
	c.waitState(id, api.Cancelled, 10*time.Second)
	c.waitGone(id)

	// A uid without an account on the node cannot run there.
	id, err = as(testUser{name: "ghost", uid: 4_000_000, gid: 4_000_000}).Submit(ctx, api.JobSpec{Command: []string{"true"},
		Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	j := c.waitState(id, api.Failed, 10*time.Second)
	if len(j.Ranks) != 1 || !strings.Contains(j.Ranks[0].Error, "no account on this node") {
		t.Errorf("job of a uid without an account: %+v", j)
	}
}

func TestUnsearchable(t *testing.T) {
	dir, err := os.MkdirTemp("", "i14-links-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	inner := filepath.Join(dir, "state")
	if err := os.Mkdir(inner, 0o750); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(inner, 0o750)
	sock := filepath.Join(inner, "relay.sock")
	if got := node.Unsearchable(sock); got != inner {
		t.Errorf("Unsearchable(%s) = %q, want %s", sock, got, inner)
	}
	os.Chmod(inner, 0o755)
	if got := node.Unsearchable(sock); got != "" {
		t.Errorf("Unsearchable(%s) = %q once searchable", sock, got)
	}
}
