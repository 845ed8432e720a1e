package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/localcluster"
)

// An agent that is not root runs jobs only for its own user: it refuses
// another user's submission with 403 saying why, and accepts its user's.
func TestUnprivilegedAgentServesOnlyItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates a user and runs an agent as it")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd not installed")
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "i14" + hex.EncodeToString(b)
	if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", "/nonexistent", "--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid64, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid64, _ := strconv.ParseUint(u.Gid, 10, 32)
	uid, gid := uint32(uid64), uint32(gid64)

	// The agent's binary, state and key, all the user's.
	dir, err := os.MkdirTemp("", "i14-auth-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "cosched")
	copyFile(t, exe, bin, 0o755)
	key, err := clusterkey.Generate(filepath.Join(dir, "cluster.key"))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, state, filepath.Join(dir, "cluster.key")} {
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	ready := filepath.Join(state, "ready.json")
	cmd := exec.Command(bin, "agent", "--name", "u0", "--bind", "127.0.0.1:0", "--local", "--controller", "--mode", "space",
		"--processors", "1", "--state-dir", state, "--key-file", filepath.Join(dir, "cluster.key"), "--ready-file", ready,
		"--realtime-priority", "0", "--nice", "0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	logf, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	agentLog := func() string { b, _ := os.ReadFile(logf.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	var info localcluster.Ready
	eventually(t, 20*time.Second, func() error {
		b, err := os.ReadFile(ready)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &info)
	})
	ctx := context.Background()
	spec := api.JobSpec{Command: []string{"sleep", "100"}, Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Dir: dir}

	// Root (this test) is another user to this agent.
	_, err = api.NewKeyClient(key, info.API).Submit(ctx, spec)
	var e *api.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || !strings.Contains(e.Message, "run as "+name+", not root") {
		t.Errorf("root's submission to %s's agent: %v, want 403 saying the agents run as %s\nagent log:\n%s", name, err, name, agentLog())
	}
	// The agent's own user is served.
	tok, _ := key.Mint(uid, gid, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	cl := api.NewClient(info.API)
	cl.Token = func() (string, error) { return tok, nil }
	id, err := cl.Submit(ctx, spec)
	if err != nil {
		t.Fatalf("the agent's user's submission: %v\nagent log:\n%s", err, agentLog())
	}
	j, err := cl.Job(ctx, id)
	if err != nil || j.Spec.Owner == nil || j.Spec.Owner.User != name {
		t.Errorf("job %d: %+v %v, want owned by %s", id, j.Spec.Owner, err, name)
	}
	if err := cl.Cancel(ctx, id); err != nil {
		t.Error(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
